package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lohisoft/crawl-operator/hack/devcluster/hostproc"
)

// procCommand is `devcluster proc start NAME [--listen ADDR] [--replace] --
// CMD ARGS...` and `devcluster proc stop NAME`: the demos' own processes
// (manager, sample site, port-forward) kept in the state directory, so
// that `down` finds and stops them and a second demo reuses them.
func procCommand(args []string) error {
	if len(args) < 2 || (args[0] != "start" && args[0] != "stop") {
		return fmt.Errorf("proc wants start NAME [--listen ADDR] [--replace] -- CMD ARGS..., or stop NAME")
	}
	verb, name := args[0], args[1]
	fs := flag.NewFlagSet("proc "+verb, flag.ContinueOnError)
	dir := fs.String("dir", filepath.Join(repoRoot(), ".dev"), "The state directory: NAME.pid and NAME.log.")
	listen := fs.String("listen", "", "start: HOST:PORT the process serves; refused when another program holds it, waited for after the start.")
	replace := fs.Bool("replace", false, "start: stop a running NAME first (default: keep it).")
	if err := fs.Parse(args[2:]); err != nil {
		return err
	}
	p := hostproc.Proc{Dir: abs(*dir), Name: name}
	if verb == "stop" {
		return p.Stop(30 * time.Second)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("proc start %s: no command after --", name)
	}
	if *replace {
		if err := p.Stop(30 * time.Second); err != nil {
			return err
		}
	}
	if pid, ok := p.PID(); ok {
		fmt.Printf("%s already runs (pid %d)\n", name, pid)
		return nil
	}
	if *listen != "" && listening(*listen) {
		return fmt.Errorf("cannot start %s: %s is already in use by another program (stop it, or run make dev-cluster-down)", name, *listen)
	}
	_ = os.Remove(p.LogFile()) // its log says only this run
	if err := p.Start(nil, fs.Arg(0), fs.Args()[1:]...); err != nil {
		return err
	}
	if *listen == "" {
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if listening(*listen) {
			return nil
		}
		if _, ok := p.PID(); !ok {
			return fmt.Errorf("%s ended (%s); last lines of %s:\n%s", name, exitStatus(p), p.LogFile(), lastLines(p.LogFile(), 20))
		}
	}
	return fmt.Errorf("%s is not listening on %s after 30s (log: %s)", name, *listen, p.LogFile())
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// stopProcs stops every process `proc start` keeps in dir; the control
// plane (devcluster.pid) is down's last step, not this one's.
func stopProcs(dir string) error {
	pids, _ := filepath.Glob(filepath.Join(dir, "*.pid"))
	var errs []error
	for _, f := range pids {
		name := strings.TrimSuffix(filepath.Base(f), ".pid")
		if name == "devcluster" {
			continue
		}
		p := hostproc.Proc{Dir: dir, Name: name}
		if _, ok := p.PID(); ok {
			fmt.Printf("stopping %s\n", name)
		}
		errs = append(errs, p.Stop(30*time.Second))
	}
	return errors.Join(errs...)
}
