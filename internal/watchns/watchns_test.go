package watchns

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Namespaces{
		"":              nil,
		"  ":            nil,
		"sites":         {"sites"},
		"a,b":           {"a", "b"},
		" a , b ":       {"a", "b"},
		"team-1,team-2": {"team-1", "team-2"},
	} {
		got, err := Parse(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, why := range map[string]string{
		"a,,b":                  "empty",
		"a,":                    "empty",
		",a":                    "empty",
		"Sites":                 "not a namespace name",
		"a/b":                   "not a namespace name",
		"a b":                   "not a namespace name",
		"..":                    "not a namespace name",
		"a.b":                   "not a namespace name",
		"-a":                    "not a namespace name",
		"a,a":                   "twice",
		"ünïcode":               "not a namespace name",
		"a\x00":                 "not a namespace name",
		strings.Repeat("a", 64): "not a namespace name",
	} {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("Parse(%q) error = %v, want one saying %q", in, err, why)
		}
	}
}

func TestHasAndCache(t *testing.T) {
	var all Namespaces
	if !all.All() || !all.Has("anything") || all.Cache() != nil {
		t.Error("empty list must watch every namespace with no namespace restriction in the cache")
	}
	some := Namespaces{"a", "b"}
	if some.All() || !some.Has("a") || some.Has("c") || some.Has("") {
		t.Error("Has on a list")
	}
	if c := some.Cache(); len(c) != 2 {
		t.Errorf("Cache() = %v", c)
	}
}

func TestFlag(t *testing.T) {
	var n Namespaces
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	fs.Var(&n, "watch-namespaces", "")
	if err := fs.Parse([]string{"--watch-namespaces=a,b"}); err != nil || n.String() != "a,b" {
		t.Errorf("flag = %q, %v", n.String(), err)
	}
	if err := fs.Parse([]string{"--watch-namespaces=a,A"}); err == nil {
		t.Error("flag took an invalid name")
	}
}
