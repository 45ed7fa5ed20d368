package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Packages are the Debian packages a real node needs; InstallPackages
// installs those missing.
var Packages = []string{"containerd", "runc", "containernetworking-plugins", "iptables"}

func missingTools() []string {
	var m []string
	for _, c := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "ip6tables", "ip"} {
		if _, err := exec.LookPath(c); err != nil {
			m = append(m, c)
		}
	}
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(CNIBinDir, p)); err != nil {
			m = append(m, filepath.Join(CNIBinDir, p))
		}
	}
	return m
}

// InstallPackages installs the missing Debian packages (apt-get, root),
// logging to logFile.
func InstallPackages(logFile string) error {
	if len(missingTools()) == 0 {
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil // Preflight says what is missing
	}
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	install := func() error {
		cmd := exec.Command("apt-get", append([]string{"install", "-y", "-q", "--no-install-recommends"}, Packages...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		return cmd.Run()
	}
	if install() == nil {
		return nil
	}
	update := exec.Command("apt-get", "update", "-q")
	update.Stdout, update.Stderr = log, log
	if err := update.Run(); err != nil || install() != nil {
		return fmt.Errorf("apt-get install %s failed; see %s", strings.Join(Packages, " "), logFile)
	}
	return nil
}

// Preflight says in one line why this machine cannot run real nodes now,
// or returns "". binDir holds the kubelet and kube-proxy.
func Preflight(binDir string) string {
	switch {
	case runtime.GOOS != "linux":
		return "not Linux"
	case os.Geteuid() != 0:
		return "needs root (kubelet, containerd, bridges, iptables, cgroups)"
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			return "no cgroup memory controller under /sys/fs/cgroup"
		}
	}
	if m := missingTools(); len(m) > 0 {
		return fmt.Sprintf("missing %s (apt-get install %s; make dev-cluster REAL_NODE=1 installs them)",
			strings.Join(m, " "), strings.Join(Packages, " "))
	}
	for _, b := range []string{"kubelet", "kube-proxy"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Sprintf("no %s in %s (make k8s-bin builds it)", b, binDir)
		}
	}
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
		return "no br_netfilter (/proc/sys/net/bridge): Services cannot answer Pods on a bridge"
	}
	probe := fmt.Sprintf("crp%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "link", "add", probe, "type", "bridge").CombinedOutput(); err != nil {
		return fmt.Sprintf("cannot create a bridge (ip link add type bridge): %s", strings.TrimSpace(string(out)))
	}
	_ = exec.Command("ip", "link", "del", probe).Run()
	return ""
}
