// Command manager runs the crawl-operator: the CrawlTarget and Exclusion
// reconcilers, the results endpoint crawler Pods report to, and the index
// (search API, /bot, /bot/ips.json). internal/operator does the wiring.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/lohisoft/crawl-operator/internal/operator"
)

func main() {
	o := operator.Defaults()
	o.BindFlags(flag.CommandLine)
	zapOpts := zap.Options{Development: false}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

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
