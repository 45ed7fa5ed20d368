// Package browser starts a real browser for tests: Debian's headless
// Chromium, driven with chromedp, on a closed network. Only tests import it.
package browser

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path is where Debian's chromium package installs the browser; .ci/run
// installs it.
const Path = "/usr/bin/chromium"

// ActionTimeout bounds one step a test runs in the browser.
const ActionTimeout = 30 * time.Second

// New starts headless Chromium with a fresh profile and returns the context
// of its one tab. Without Chromium the test fails under CI=true, where
// .ci/run must have installed it, and is skipped elsewhere, saying why.
// Cleanup stops the browser, fails the test if any of its processes is
// left, and removes the profile.
func New(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(Path); err != nil {
		msg := "no Chromium at " + Path + " (apt-get install chromium; .ci/run installs it): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	profile, err := os.MkdirTemp("", "searchui-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(profile),
		// Chromium puts its singleton socket in a directory of its own under
		// TMPDIR and leaves it behind when it is stopped: inside the profile
		// it goes with it.
		chromedp.Env("TMPDIR=" + profile),
		chromedp.WindowSize(1100, 900),
		// The network here is closed: without these Chromium floods it with
		// connections that are refused, and it must never reach beyond
		// loopback anyway.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"),
	}
	before := singletonDirs()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // waits for the browser to exit
		if left := processesUsing(profile); len(left) > 0 {
			t.Errorf("Chromium processes %v are left after the test", left)
		}
		if err := os.RemoveAll(profile); err != nil {
			t.Errorf("remove the Chromium profile: %v", err)
		}
		for _, d := range singletonDirs() {
			if !slices.Contains(before, d) {
				t.Errorf("Chromium left %s behind", d)
			}
		}
	})
	// The first run starts the browser; it must not carry a timeout, which
	// would stop the browser with it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// Run runs one action in the tab of ctx, within ActionTimeout.
func Run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, ActionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// processesUsing lists the processes with profile as their user data
// directory: Chromium passes --user-data-dir to every child it starts.
func processesUsing(profile string) []int {
	want := []byte("--user-data-dir=" + profile)
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		for arg := range bytes.SplitSeq(cmdline, []byte{0}) {
			if bytes.Equal(arg, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// singletonDirs lists the directories Chromium makes in the machine's
// temporary directory for its singleton socket.
func singletonDirs() []string {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "org.chromium.Chromium.*"))
	return dirs
}
