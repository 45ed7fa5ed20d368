// Package agent is the dev cluster's stand-in for a kubelet: it runs the
// containers of Pods bound to its Nodes as local processes, reports Pod
// status and exit codes, enforces activeDeadlineSeconds, and stops a
// process when its Pod is deleted. When it shuts down it stops every
// process it started, the way a node that goes away ends its Pods, so
// nothing outlives the dev cluster. It supports exactly what crawler Pods
// use (one container, a command mapped to a local binary, env from
// literals and Secrets). It is a test harness: real clusters run kubelets.
package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Agent runs Pods bound to Nodes as processes.
type Agent struct {
	Client client.Client
	// Reader reads Secrets straight from the API server.
	Reader client.Reader
	// Nodes are the Node names this agent plays the kubelet for.
	Nodes map[string]bool
	// Commands maps a container's command to a local binary, e.g.
	// "crawler" to bin/crawler.
	Commands map[string]string
	// LogDir receives one log file per Pod: <namespace>_<pod>.log.
	LogDir string
	// ShutdownGrace is what Shutdown gives each process between SIGTERM
	// and SIGKILL when the agent stops (default DefaultShutdownGrace).
	ShutdownGrace time.Duration

	mu       sync.Mutex
	running  map[string]*process
	closing  bool           // shutting down: start nothing more
	finished sync.WaitGroup // one per process, until its end is reported
}

type process struct {
	cmd    *exec.Cmd
	done   chan struct{}
	reason string // why the agent stopped it, if it did
}

// CacheOptions limits the agent's cache to Pods bound to some Node.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: {Field: fields.OneTermNotEqualSelector("spec.nodeName", "")},
	}}
}

// podWorkers is how many Pods the agent starts or stops at once.
const podWorkers = 16

// SetupWithManager registers the agent as a Pod reconciler.
func (a *Agent) SetupWithManager(mgr ctrl.Manager) error {
	a.running = map[string]*process{}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		grace := a.ShutdownGrace
		if grace <= 0 {
			grace = DefaultShutdownGrace
		}
		a.Shutdown(grace)
		return nil
	})); err != nil {
		return err
	}
	// A kubelet runs a worker per Pod, so Pods bound at once start at
	// once. The work queue never hands one Pod to two workers.
	return ctrl.NewControllerManagedBy(mgr).For(&corev1.Pod{}).Named("dev-node-agent").
		WithOptions(controller.Options{MaxConcurrentReconciles: podWorkers}).Complete(a)
}

// Reconcile starts, watches and stops the process of one Pod.
func (a *Agent) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.String()
	pod := &corev1.Pod{}
	if err := a.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			a.stop(key, "Pod deleted", 0)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !a.Nodes[pod.Spec.NodeName] {
		return ctrl.Result{}, nil
	}
	if pod.DeletionTimestamp != nil {
		grace := time.Duration(ptrOr(pod.DeletionGracePeriodSeconds, 30)) * time.Second
		a.stop(key, "Pod deleted", grace)
		// Like a kubelet, remove the Pod for good once its process is gone.
		err := a.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || a.isRunning(key) {
		return ctrl.Result{}, nil
	}
	if err := a.start(ctx, key, pod); err != nil {
		if errors.Is(err, errShuttingDown) {
			return ctrl.Result{}, nil
		}
		log.FromContext(ctx).Info("cannot start pod yet", "pod", key, "reason", err.Error())
		_ = a.setWaiting(ctx, pod, "CreateContainerConfigError", err.Error())
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	return ctrl.Result{}, nil
}

func (a *Agent) isRunning(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.running[key]
	return ok
}

func (a *Agent) start(ctx context.Context, key string, pod *corev1.Pod) error {
	if len(pod.Spec.Containers) != 1 || len(pod.Spec.Containers[0].Command) == 0 {
		return a.fail(ctx, pod, "dev node agent runs Pods with exactly one container with a command")
	}
	c := pod.Spec.Containers[0]
	binary, ok := a.Commands[c.Command[0]]
	if !ok {
		return a.fail(ctx, pod, fmt.Sprintf("dev node agent has no local binary for command %q", c.Command[0]))
	}
	env, err := a.environment(ctx, pod.Namespace, c.Env)
	if err != nil {
		return err
	}
	args := append(append([]string{}, c.Command[1:]...), c.Args...)
	for i := range args {
		args[i] = expand(args[i], env)
	}
	logPath := filepath.Join(a.LogDir, pod.Namespace+"_"+pod.Name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, args...)
	// Only the Pod's own environment: in particular not the agent's
	// KUBECONFIG, so crawler processes hold no cluster credentials here
	// either.
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + os.TempDir(), "TMPDIR=" + os.TempDir()}, flatten(env)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = os.TempDir()
	// Its own process group, so a stop reaches its children too; SIGKILL
	// when the agent dies without a shutdown (kill -9), so no crawler
	// outlives it even then.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		logf.Close()
		return errShuttingDown
	}
	if err := cmd.Start(); err != nil {
		a.mu.Unlock()
		logf.Close()
		return a.fail(ctx, pod, "start "+binary+": "+err.Error())
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	a.running[key] = p
	a.finished.Add(1)
	a.mu.Unlock()
	started := metav1.Now()
	if err := a.setRunning(ctx, pod, started); err != nil {
		log.FromContext(ctx).Error(err, "report running", "pod", key)
	}
	var deadline *time.Timer
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		deadline = time.AfterFunc(time.Duration(*d)*time.Second, func() { a.stop(key, "DeadlineExceeded", 0) })
	}
	go func() {
		defer a.finished.Done()
		err := cmd.Wait()
		logf.Close()
		if deadline != nil {
			deadline.Stop()
		}
		a.mu.Lock()
		delete(a.running, key)
		reason := p.reason
		a.mu.Unlock()
		close(p.done)
		a.finish(pod, started, exitCode(err), reason, logPath)
	}()
	return nil
}

var errShuttingDown = errors.New("dev node agent is shutting down")

// DefaultShutdownGrace is how long the agent gives each process between
// SIGTERM and SIGKILL when it stops: crawler Pods' own grace period.
const DefaultShutdownGrace = 10 * time.Second

// Shutdown stops every process the agent started, as a node going away
// ends its Pods: SIGTERM, SIGKILL after grace. It starts nothing more, and
// returns once each process is gone and its end reported (phase Failed,
// reason Terminated).
func (a *Agent) Shutdown(grace time.Duration) {
	a.mu.Lock()
	a.closing = true
	keys := make([]string, 0, len(a.running))
	for k := range a.running {
		keys = append(keys, k)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.stop(k, reasonShutdown, grace)
		}()
	}
	wg.Wait()
	a.finished.Wait()
}

// Running returns the process ids of the Pods the agent runs now.
func (a *Agent) Running() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]int, len(a.running))
	for k, p := range a.running {
		out[k] = p.cmd.Process.Pid
	}
	return out
}

const reasonShutdown = "Terminated"

// stop ends a Pod's process: SIGTERM to its process group, SIGKILL after
// the grace period. It waits until the process is gone.
func (a *Agent) stop(key, reason string, grace time.Duration) {
	a.mu.Lock()
	p, ok := a.running[key]
	if ok && p.reason == "" {
		p.reason = reason
	}
	a.mu.Unlock()
	if !ok {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// finish reports how a process ended, unless the Pod is gone already.
func (a *Agent) finish(pod *corev1.Pod, started metav1.Time, code int32, reason, logPath string) {
	ctx := context.Background()
	phase, termReason := corev1.PodSucceeded, "Completed"
	if code != 0 || reason != "" {
		phase, termReason = corev1.PodFailed, "Error"
	}
	podReason, podMessage := "", ""
	switch reason {
	case "DeadlineExceeded":
		podReason = reason
	case reasonShutdown:
		podReason, podMessage = reason, "Pod was terminated because the dev node agent shut down."
	}
	message := ""
	if phase == corev1.PodFailed {
		message = tail(logPath, 2048) // terminationMessagePolicy FallbackToLogsOnError
	}
	err := a.update(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = phase
		st.Reason, st.Message = podReason, podMessage
		st.Conditions = conditions(corev1.ConditionFalse)
		st.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image, ImageID: "dev-node-agent://local",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: code, Reason: termReason, Message: message, StartedAt: started, FinishedAt: metav1.Now(),
			}},
		}}
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Log.Error(err, "report pod end", "pod", pod.Namespace+"/"+pod.Name)
	}
}

func (a *Agent) setRunning(ctx context.Context, pod *corev1.Pod, started metav1.Time) error {
	return a.update(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodRunning
		st.HostIP, st.PodIP = "127.0.0.1", "127.0.0.1"
		st.StartTime = &started
		st.Conditions = conditions(corev1.ConditionTrue)
		st.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image, ImageID: "dev-node-agent://local",
			Ready: true, Started: ptrTo(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
		}}
	})
}

func (a *Agent) setWaiting(ctx context.Context, pod *corev1.Pod, reason, msg string) error {
	return a.update(ctx, pod, func(st *corev1.PodStatus) {
		st.ContainerStatuses = []corev1.ContainerStatus{{
			Name: pod.Spec.Containers[0].Name, Image: pod.Spec.Containers[0].Image,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
		}}
	})
}

// fail marks a Pod Failed for something it asks that the agent cannot do.
func (a *Agent) fail(ctx context.Context, pod *corev1.Pod, msg string) error {
	return a.update(ctx, pod, func(st *corev1.PodStatus) {
		st.Phase = corev1.PodFailed
		st.Reason = "UnsupportedByDevNodeAgent"
		st.Message = msg
	})
}

func (a *Agent) update(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.PodStatus)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		fresh := &corev1.Pod{}
		if err := a.Reader.Get(ctx, client.ObjectKeyFromObject(pod), fresh); err != nil {
			return err
		}
		if fresh.UID != pod.UID {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		mutate(&fresh.Status)
		return a.Client.Status().Update(ctx, fresh)
	})
}

// environment resolves a container's env, reading Secrets the way a
// kubelet does. A missing Secret is an error to retry, not a failure.
func (a *Agent) environment(ctx context.Context, ns string, vars []corev1.EnvVar) (map[string]string, error) {
	env := map[string]string{}
	for _, v := range vars {
		switch {
		case v.ValueFrom == nil:
			env[v.Name] = expand(v.Value, env)
		case v.ValueFrom.SecretKeyRef != nil:
			ref := v.ValueFrom.SecretKeyRef
			s := &corev1.Secret{}
			if err := a.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, s); err != nil {
				return nil, fmt.Errorf("secret %q for env %s: %w", ref.Name, v.Name, err)
			}
			val, ok := s.Data[ref.Key]
			if !ok {
				return nil, fmt.Errorf("secret %q has no key %q", ref.Name, ref.Key)
			}
			env[v.Name] = string(val)
		default:
			return nil, fmt.Errorf("env %s: only literal values and secretKeyRef are supported", v.Name)
		}
	}
	return env, nil
}

// expand replaces $(VAR) with env values as Kubernetes does; $$ escapes
// and unknown references stay as written.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func flatten(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func conditions(ready corev1.ConditionStatus) []corev1.PodCondition {
	now := metav1.Now()
	out := []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	for _, t := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
		out = append(out, corev1.PodCondition{Type: t, Status: ready, LastTransitionTime: now})
	}
	return out
}

func exitCode(err error) int32 {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int32(ws.Signal())
		}
		return int32(ee.ExitCode())
	}
	return 128
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

func ptrOr(p *int64, def int64) int64 {
	if p == nil {
		return def
	}
	return *p
}

func ptrTo[T any](v T) *T { return &v }

var _ reconcile.Reconciler = (*Agent)(nil)

// Options configure NewManager.
type Options struct {
	// NodeNames are the Nodes the agent runs Pods for.
	NodeNames []string
	// Commands maps container commands to local binaries.
	Commands map[string]string
	LogDir   string
	// ShutdownGrace: see Agent.ShutdownGrace.
	ShutdownGrace time.Duration
}

// NewManager returns a controller-runtime manager running an Agent.
func NewManager(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	mgr, _, err := newManager(cfg, opts)
	return mgr, err
}

func newManager(cfg *rest.Config, opts Options) (ctrl.Manager, *Agent, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, nil, err
	}
	// A kubelet may send 50 requests a second to the API server, 100 in
	// a burst (its kubeAPIQPS and kubeAPIBurst defaults), and the agent
	// stands in for one per node. client-go's own default, 5 and 10,
	// held back the Secret reads and status writes of a wave of eight
	// crawler Pods starting at once: the last one started 0.15-0.19 s
	// after it was bound, against 0.03 s for a Pod alone.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = float32(50*max(1, len(opts.NodeNames))), 100*max(1, len(opts.NodeNames))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  CacheOptions(),
		Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
	})
	if err != nil {
		return nil, nil, err
	}
	nodes := map[string]bool{}
	for _, n := range opts.NodeNames {
		nodes[n] = true
	}
	a := &Agent{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Nodes: nodes, Commands: opts.Commands, LogDir: opts.LogDir, ShutdownGrace: opts.ShutdownGrace}
	if err := a.SetupWithManager(mgr); err != nil {
		return nil, nil, err
	}
	return mgr, a, nil
}
