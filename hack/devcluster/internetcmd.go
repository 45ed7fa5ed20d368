package main

import (
	"context"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lohisoft/crawl-operator/hack/devcluster/addons"
	"github.com/lohisoft/crawl-operator/hack/devcluster/internet"
	"github.com/lohisoft/crawl-operator/hack/devcluster/node"
)

// internetCommand runs `devcluster internet up|down|site|dns|check`.
func internetCommand(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("internet wants up, down, site NAME [--ipv6] [--tls], dns or check")
	}
	verb, rest := args[0], args[1:]
	var name string
	if verb == "site" {
		if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
			return fmt.Errorf("internet site wants a NAME")
		}
		name, rest = rest[0], rest[1:]
	}
	fs := flag.NewFlagSet("internet "+verb, flag.ContinueOnError)
	dir := fs.String("dir", defaultDevDir("internet"), "The internet's state: its plan, journal, zone and DNS server's log.")
	nodesDir := fs.String("nodes-dir", defaultNodesDir(), "up: the real nodes whose Pods reach the internet.")
	kubeconfig := kubeconfigFlag(fs)
	coredns := fs.String("coredns", filepath.Join(repoRoot(), "bin", "coredns", "coredns"), "up: the DNS server (make coredns-bin).")
	netns := fs.String("netns", "crawl-internet", "up: the network namespace's name.")
	link := fs.String("link", "crawlinet0", "up: the name of the machine's end of the link into it.")
	ipv6 := fs.Bool("ipv6", false, "site: give the site an IPv6 address (AAAA) too.")
	tls := fs.Bool("tls", false, "site: issue it a certificate from the internet's CA too (printed: cert, key and the CA).")
	addr := fs.String("addr", "", "echo: where to serve the egress echo.")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	*dir = abs(*dir)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	switch verb {
	case "up":
		return internetUp(ctx, *dir, abs(*nodesDir), *kubeconfig, abs(*coredns), *netns, *link)
	case "down":
		return internetDown(ctx, *dir, abs(*nodesDir), *kubeconfig)
	case "dns":
		fmt.Println(internet.DNSAddr)
		return nil
	case "echo":
		return internet.ServeEcho(ctx, *addr)
	case "check":
		w, err := internet.Load(*dir)
		if err != nil {
			return err
		}
		if left := w.Leftovers(); len(left) > 0 {
			for _, l := range left {
				fmt.Println(l)
			}
			return errSilent
		}
		return nil
	case "site":
		w, err := internet.Load(*dir)
		if err != nil {
			return err
		}
		s, err := w.AddSite(name, *ipv6)
		if err != nil {
			return err
		}
		if err := w.WaitName(ctx, s.Name, s.IPv4, 10*time.Second); err != nil {
			return err
		}
		fmt.Printf("name=%s\nnetns=%s\nipv4=%s\n", s.Name, w.Netns, s.IPv4)
		if s.IPv6.IsValid() {
			fmt.Printf("ipv6=%s\n", s.IPv6)
		}
		if *tls {
			cert, key, err := w.IssueCert(s.Name)
			if err != nil {
				return err
			}
			fmt.Printf("cert=%s\nkey=%s\nca=%s\n", cert, key, w.CAFile())
		}
		logf("serve it with: ip netns exec %s bin/samplesite --addr %s:80", w.Netns, s.IPv4)
		return nil
	}
	return fmt.Errorf("internet %s: want up, down, site, dns or check", verb)
}

// internetUp makes the internet for the real nodes and points the
// cluster's DNS at its server.
func internetUp(ctx context.Context, dir, nodesDir, kubeconfig, coredns, netns, link string) (err error) {
	if internet.Exists(dir) {
		return fmt.Errorf("%s already holds an internet (devcluster internet down)", dir)
	}
	if _, err := os.Stat(coredns); err != nil {
		return fmt.Errorf("no DNS server at %s (make coredns-bin)", coredns)
	}
	f, err := node.LoadFleet(nodesDir)
	if err != nil {
		return err
	}
	w := internet.New(dir, netns, link, f)
	defer func() {
		if err != nil {
			logf("the internet failed to start; removing it")
			_ = w.Down()
		}
	}()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := w.Up(ctx, coredns, self); err != nil {
		return err
	}
	if err := addons.SetUpstream(ctx, addonOptions(f, kubeconfig, ""), internet.DNSAddr.String()); err != nil {
		return err
	}
	logf("internet up in network namespace %s: DNS %s (%s), echo %s (%s); cluster DNS forwards to it",
		netns, internet.DNSName, internet.DNSAddr, internet.EchoName, internet.EchoAddr)
	return nil
}

// internetDown points the cluster's DNS back at nothing, when the cluster
// is still there, and removes the internet.
func internetDown(ctx context.Context, dir, nodesDir, kubeconfig string) error {
	if !internet.Exists(dir) {
		return nil
	}
	w, err := internet.Load(dir)
	if err != nil {
		return err
	}
	if f, err := node.LoadFleet(nodesDir); err == nil {
		if _, err := os.Stat(kubeconfig); err == nil {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_ = addons.SetUpstream(ctx, addonOptions(f, kubeconfig, ""), "")
		}
	}
	if err := w.Down(); err != nil {
		return err
	}
	logf("internet down: nothing left behind")
	return nil
}

// egressIPCommand is `devcluster node egress-ip NODE ADDR`.
func egressIPCommand(nodeName string, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("node egress-ip %s wants an address", nodeName)
	}
	addr, err := netip.ParseAddr(args[0])
	if err != nil || !addr.Is4() {
		return fmt.Errorf("%q is not an IPv4 address", args[0])
	}
	fs := flag.NewFlagSet("node egress-ip", flag.ContinueOnError)
	dir := fs.String("internet-dir", defaultDevDir("internet"), "The internet's state.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	w, err := internet.Load(abs(*dir))
	if err != nil {
		return err
	}
	if err := w.SetEgress(nodeName, addr); err != nil {
		return err
	}
	logf("node %s's Pods now reach the internet from %s", nodeName, addr)
	return nil
}

// defaultDevDir is a directory of the repository's .dev state.
func defaultDevDir(name string) string { return filepath.Join(repoRoot(), ".dev", name) }

// addonOptions are the add-ons' settings for the fleet, the same for
// every command that applies them.
func addonOptions(f node.Fleet, kubeconfig, binDir string) addons.Options {
	a := addons.Options{Root: repoRoot(), StateDir: filepath.Join(f.Dir, "addons"), Kubeconfig: kubeconfig,
		KubeProxy: filepath.Join(binDir, "kube-proxy"), Node: f.Nodes[0].Name, Network: f.Network}
	for _, n := range f.Nodes {
		a.ContainerdSockets = append(a.ContainerdSockets, n.Socket())
	}
	return a
}
