//go:build scale

package controllers_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
)

// TestQueueAtScale measures the crawl queue with thousands of waiting
// targets (QUEUE_SCALE_TARGETS, default 5,000) on one egress node of one
// slot (QUEUE_SCALE_WORKERS sets --max-concurrent-reconciles): how long
// until every target is reconciled, how many requests the
// manager sends while they wait and nothing changes, and how soon the
// oldest starts once the slot frees. It logs figures; it asserts only that
// at most one crawl runs.
//
//	go test -tags scale -run TestQueueAtScale -v -timeout 30m ./controllers/
func TestQueueAtScale(t *testing.T) {
	n := 5000
	if v := os.Getenv("QUEUE_SCALE_TARGETS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	workers := 0 // the default
	if v := os.Getenv("QUEUE_SCALE_WORKERS"); v != "" {
		var err error
		if workers, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	createEgressNode(t, "egress-scale", "79.139.58.98")
	ns := newNamespace(t)
	op := startOperator(t, operatorOptions{maxPerNode: 1, namespaces: []string{ns}, workers: workers})
	ctx := context.Background()

	start := time.Now()
	var wg sync.WaitGroup
	names := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range names {
				ct := &crawlv1.CrawlTarget{}
				ct.Namespace, ct.Name = ns, fmt.Sprintf("t%05d", i)
				ct.Spec.URL = fmt.Sprintf("https://t%05d.scale.example.com/", i)
				if err := k8s.Create(ctx, ct); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	created := time.Since(start)
	eventually := func(what string, every time.Duration, check func() error) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Minute)
		for {
			err := check()
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(every)
		}
	}
	eventually("every target reconciled with a SiteIndex", time.Second, func() error {
		var targets crawlv1.CrawlTargetList
		if err := k8s.List(ctx, &targets, client.InNamespace(ns)); err != nil {
			return err
		}
		var indexes crawlv1.SiteIndexList
		if err := k8s.List(ctx, &indexes, client.InNamespace(ns)); err != nil {
			return err
		}
		done := 0
		for _, ct := range targets.Items {
			if meta.FindStatusCondition(ct.Status.Conditions, crawlv1.ConditionReady) != nil {
				done++
			}
		}
		if done < n || len(indexes.Items) < n {
			return fmt.Errorf("%d of %d reconciled, %d SiteIndexes", done, n, len(indexes.Items))
		}
		return nil
	})
	t.Logf("%d targets: created in %.1fs, all reconciled with a SiteIndex %.1fs after the first was created",
		n, created.Seconds(), time.Since(start).Seconds())

	time.Sleep(5 * time.Second)
	mark := auditMark(t)
	const quiet = 30 * time.Second
	time.Sleep(quiet)
	reqs := managerRequests(t, mark)
	byKind := map[string]int{}
	for _, r := range reqs {
		byKind[r.Permission().String()]++
	}
	t.Logf("%d waiting: %d manager requests in %s (%.2f/s): %v", n-1, len(reqs), quiet, float64(len(reqs))/quiet.Seconds(), byKind)

	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d crawler Pods on a node of one slot", len(pods.Items))
	}
	running := pods.Items[0]
	// The oldest due is the first created (one-second resolution), then
	// by name.
	var targets crawlv1.CrawlTargetList
	if err := k8s.List(ctx, &targets, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	waiting := slices.DeleteFunc(targets.Items, func(ct crawlv1.CrawlTarget) bool {
		return ct.Name == running.Labels[crawlpod.LabelTarget]
	})
	oldest := slices.MinFunc(waiting, func(a, b crawlv1.CrawlTarget) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	setPodPhase(t, &running, corev1.PodFailed, 1)
	freed := time.Now()
	eventually("the next crawl", 50*time.Millisecond, func() error {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(ns)); err != nil {
			return err
		}
		active := 0
		for i := range pods.Items {
			if crawlpod.Active(&pods.Items[i]) {
				active++
			}
		}
		if active > 1 {
			t.Fatalf("%d crawls on a node of one slot", active)
		}
		for _, p := range pods.Items {
			if p.Name != running.Name && p.Labels[crawlpod.LabelTarget] != oldest.Name {
				t.Fatalf("the freed slot went to %s, not to the oldest waiting target %s", p.Labels[crawlpod.LabelTarget], oldest.Name)
			}
		}
		if len(pods.Items) < 2 {
			return fmt.Errorf("no second Pod")
		}
		return nil
	})
	t.Logf("slot freed with %d waiting: next crawler Pod %.2fs later", n-1, time.Since(freed).Seconds())
	_ = op
}
