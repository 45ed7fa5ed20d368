package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	crawlv1 "github.com/lohisoft/crawl-operator/api/v1beta1"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/internal/crawlpod"
	"github.com/lohisoft/crawl-operator/internal/testenv"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

// leaseName is the manager's LeaderElectionID (internal/operator).
const leaseName = "crawl-operator.crawl.lohisoft.com"

// leaseState is one version of the Lease as a watch saw it.
type leaseState struct {
	at       time.Time
	holder   string
	duration int32
	acquired time.Time
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// leaseHolder is the Lease's holder now ("" when released or absent).
func leaseHolder() (string, error) {
	l := &coordinationv1.Lease{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: testenv.ManagerNamespace, Name: leaseName}, l); err != nil {
		return "", err
	}
	return holderOf(l), nil
}

// watchLease records every version of the Lease from now until the test
// ends.
func watchLease(t *testing.T) func() []leaseState {
	t.Helper()
	wc, err := client.NewWithWatch(testenv.Current().Admin, client.Options{Scheme: testenv.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w, err := wc.Watch(wctx, &coordinationv1.LeaseList{}, client.InNamespace(testenv.ManagerNamespace),
		client.MatchingFields{"metadata.name": leaseName})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []leaseState
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			s := leaseState{at: time.Now(), holder: holderOf(l)}
			if l.Spec.LeaseDurationSeconds != nil {
				s.duration = *l.Spec.LeaseDurationSeconds
			}
			if l.Spec.AcquireTime != nil {
				s.acquired = l.Spec.AcquireTime.Time
			}
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() { w.Stop(); cancel(); <-done })
	return func() []leaseState {
		mu.Lock()
		defer mu.Unlock()
		return append([]leaseState(nil), seen...)
	}
}

// logSays is an eventually-check: the replica's log has s.
func (r *replica) logSays(s string) func() error {
	return func() error {
		b, err := os.ReadFile(r.log)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), s) {
			return fmt.Errorf("%s has not logged %q", r.name, s)
		}
		return nil
	}
}

// A rollout deletes the leader while a crawl is in flight: the standby
// leads within seconds, because the stopping leader releases its Lease as
// soon as its reconcilers have stopped, instead of after the reports and
// searches it is still answering (up to 10 s) or not at all (killed at the
// Pod's grace period, the Lease left to expire 15 s later). The two
// replicas run as the chart runs them; a crawler is sending its final
// report to the leader when the leader gets SIGTERM, and the report still
// lands.
func TestStoppingLeaderHandsOverItsLease(t *testing.T) {
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "handover-"}}
	if err := k8s.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	// A node of its own: crawls of earlier runs may still hold the slots
	// of another (envtest has no garbage collector for their Pods).
	testutil.CreateEgressNode(t, k8s, "egress-"+nsObj.Name, "79.139.58.122")
	flags := []string{"--leader-elect=true", "--leader-election-namespace=" + testenv.ManagerNamespace, "--metrics-secure=false"}

	first := startReplica(t, "first", flags...)
	testutil.Eventually(t, time.Minute, "the first replica leads", first.logSays("Successfully acquired lease"))
	leader, err := leaseHolder()
	if err != nil || leader == "" {
		t.Fatalf("Lease holder %q (%v) once the first replica leads", leader, err)
	}
	// A site of its own: a site another target has (an earlier run of
	// this test) is not crawled twice.
	site := "https://" + nsObj.Name + ".petrels.example"
	ct := &crawlv1.CrawlTarget{ObjectMeta: metav1.ObjectMeta{Namespace: nsObj.Name, Name: "petrels"}, Spec: crawlv1.CrawlTargetSpec{URL: site + "/"}}
	if err := k8s.Create(ctx, ct); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(ctx, ct) })
	pod := &corev1.Pod{}
	testutil.Eventually(t, time.Minute, "the leader starts the crawl", func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ct.Namespace, Name: crawlpod.PodName(ct.Name, 1)}, pod)
	})
	testutil.SetPodPhase(t, k8s, pod, corev1.PodRunning, 0)
	token := testutil.RunToken(t, k8s, pod)

	second := startReplica(t, "second", flags...)
	testutil.Eventually(t, time.Minute, "the second replica stands by", second.logSays("Attempting to acquire leader lease"))

	// The crawler is sending its final report: the headers and half the
	// body are in, the rest is on its way.
	report, err := json.Marshal(runreport.Report{Final: true, Result: runreport.Crawl{
		Site: site, Robots: runreport.Robots{Status: 404}, Pages: testutil.Pages(site, 3)}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", first.resultsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/runs/%s/%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
		pod.Namespace, pod.Name, first.resultsAddr, token, len(report))
	if _, err := conn.Write(report[:len(report)/2]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the handler is reading the body

	seen := watchLease(t)
	stopped := time.Now()
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	testutil.Eventually(t, 30*time.Second, "the second replica holds the Lease", func() error {
		h, err := leaseHolder()
		if err != nil {
			return err
		}
		if h == "" || h == leader {
			return fmt.Errorf("Lease held by %q", h)
		}
		took = time.Since(stopped)
		return nil
	})
	// The Lease is handed over this fast so long as the standby is ready;
	// it is 15 s and more when the leader lets it expire.
	if took > 5*time.Second {
		t.Errorf("the second replica held the Lease %s after the leader's SIGTERM, want within 5s", took.Round(10*time.Millisecond))
	}

	// The rest of the report: the old leader still takes it.
	if _, err := conn.Write(report[len(report)/2:]); err != nil {
		t.Fatalf("the rest of the report: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the report in flight got no answer: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	answered := time.Since(stopped)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the report in flight: %d %s, want 200", resp.StatusCode, answer)
	}
	si := &crawlv1.SiteIndex{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(ct), si); err != nil || si.Status.Run != pod.Name || !si.Status.Complete {
		t.Errorf("SiteIndex after the report in flight: %+v (%v)", si.Status, err)
	}

	var exited time.Duration
	select {
	case err := <-first.exited:
		first.exited <- err
		exited = time.Since(stopped)
		if err != nil {
			t.Errorf("the old leader exited with %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the old leader did not exit within a minute of SIGTERM")
	}

	// The old leader released the Lease (holder cleared, as client-go
	// does) before the second replica took it: it did not expire.
	states := seen()
	released := -1
	for i, s := range states {
		if s.holder == "" {
			released = i
			break
		}
	}
	switch {
	case released < 0:
		t.Errorf("the old leader never released the Lease: %+v", states)
	case states[len(states)-1].holder == "" || states[len(states)-1].holder == leader:
		t.Errorf("the Lease after the release: %+v", states[len(states)-1])
	default:
		if next := states[len(states)-1]; !next.acquired.After(states[released].acquired.Add(-time.Second)) {
			t.Errorf("the second replica's acquireTime %s is before the release at %s", next.acquired, states[released].acquired)
		}
	}
	rel := time.Duration(-1)
	if released >= 0 {
		rel = states[released].at.Sub(stopped)
	}
	t.Logf("SIGTERM to the leader: Lease released after %s, held by the second replica after %s; the report in flight answered after %s; the old leader exited after %s",
		rel.Round(10*time.Millisecond), took.Round(10*time.Millisecond), answered.Round(10*time.Millisecond), exited.Round(10*time.Millisecond))
}
