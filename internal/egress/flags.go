package egress

import (
	"flag"
	"strings"
)

// BindFlags binds the manager's egress flags to p. A zero Selector is set
// to the default first, so that setting only the label or only the taint
// keeps the default of the other.
func (p *Policy) BindFlags(fs *flag.FlagSet) {
	if p.Selector.LabelKey == "" {
		p.Selector = DefaultSelector()
	}
	fs.Var(labelFlag{&p.Selector}, "egress-node-label", "Label (key=value) of the egress nodes, which own the bot's public IPv4 addresses.")
	fs.Var(taintFlag{&p.Selector}, "egress-node-taint", "Taint (key=value:Effect) of the egress nodes; crawler Pods tolerate it.")
	fs.Var(addressesFlag{&p.Expected}, "expected-egress-ips", "Comma-separated public IPv4 addresses published to site owners; egress nodes with another ExternalIP get no crawls (empty: any).")
	fs.BoolVar(&p.RequireFCrDNS, "require-egress-fcrdns", p.RequireFCrDNS, "Give no crawls to egress nodes whose IP fails forward-confirmed reverse DNS, and leave them out of /bot (the chart turns it on).")
}

type labelFlag struct{ s *Selector }

func (f labelFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.LabelKey + "=" + f.s.LabelValue
}

func (f labelFlag) Set(v string) error {
	parsed, err := ParseSelector(v, f.taint())
	if err != nil {
		return err
	}
	f.s.LabelKey, f.s.LabelValue = parsed.LabelKey, parsed.LabelValue
	return nil
}

func (f labelFlag) taint() string { return taintFlag(f).String() }

type taintFlag struct{ s *Selector }

func (f taintFlag) String() string {
	if f.s == nil {
		return ""
	}
	return f.s.TaintKey + "=" + f.s.TaintValue + ":" + string(f.s.TaintEffect)
}

func (f taintFlag) Set(v string) error {
	parsed, err := ParseSelector(labelFlag(f).String(), v)
	if err != nil {
		return err
	}
	f.s.TaintKey, f.s.TaintValue, f.s.TaintEffect = parsed.TaintKey, parsed.TaintValue, parsed.TaintEffect
	return nil
}

type addressesFlag struct{ a *Addresses }

func (f addressesFlag) String() string {
	if f.a == nil {
		return ""
	}
	return strings.Join(f.a.list, ",")
}

func (f addressesFlag) Set(v string) error {
	a, err := ParseAddresses(v)
	if err != nil {
		return err
	}
	*f.a = a
	return nil
}
