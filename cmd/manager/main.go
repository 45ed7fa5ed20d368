// Command manager runs the crawl-operator: the CrawlTarget and Exclusion
// reconcilers, the results endpoint crawler Pods report to, and the index
// (search API, /bot, /bot/ips.json). internal/operator does the wiring.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lohisoft/crawl-operator/index"
	"github.com/lohisoft/crawl-operator/internal/operator"
	"github.com/lohisoft/crawl-operator/internal/uninstall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "cleanup" {
		os.Exit(cleanup(os.Args[2:]))
	}
	o := operator.Defaults()
	o.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	dsn, _ := o.Index.StorageDSN(os.Getenv)
	outside := index.MemoryOutsideGoHeap(dsn)
	limit, err := o.Manager.GoMemLimit(os.Getenv("GOMEMLIMIT"), os.Getenv(operator.MemoryLimitEnv), outside)
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(2)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		ctrl.Log.Info("Go memory limit set", "bytes", limit, "ratio", o.Manager.MemoryLimitRatio,
			"containerLimit", os.Getenv(operator.MemoryLimitEnv), "indexCachesOutsideGoHeap", outside)
	}

	if err := run(ctrl.SetupSignalHandler(), ctrl.GetConfigOrDie(), o); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

// run runs the operator until ctx ends. It needs the Kubernetes API, not
// the index backend: that is connected in the background.
func run(ctx context.Context, cfg *rest.Config, o operator.Options) error {
	op, err := operator.New(cfg, o)
	if err != nil {
		return err
	}
	ctrl.Log.Info("starting manager", "resultsURL", o.Pod.ResultsURL, "crawlerImage", o.Pod.Image,
		"maxCrawlsPerNode", o.MaxCrawlsPerNode, "minCrawlDelay", o.Pod.MinDelay)
	return op.Start(ctx)
}

// cleanup is `manager cleanup [--namespaces a,b]`, the chart's post-delete
// hook: it removes the crawler Pods and NetworkPolicies the manager made
// (internal/uninstall; the garbage collector removes each Pod's token
// Secret with it) and exits.
func cleanup(args []string) int {
	fs := flag.NewFlagSet("cleanup", flag.ContinueOnError)
	namespaces := fs.String("namespaces", "", "Comma-separated namespaces to clean (the chart's watchNamespaces); empty: every namespace.")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := client.New(ctrl.GetConfigOrDie(), client.Options{})
	if err == nil {
		var r uninstall.Removed
		ctx, cancel := context.WithTimeout(ctrl.SetupSignalHandler(), 4*time.Minute)
		defer cancel()
		if r, err = uninstall.Cleanup(ctx, c, splitList(*namespaces)); err == nil {
			fmt.Printf("removed %d crawler Pods (their token Secrets go with them) and %d NetworkPolicies\n", r.Pods, r.NetworkPolicies)
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "manager cleanup:", err)
	return 1
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
