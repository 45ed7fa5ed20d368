package chart

import (
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/internal/egress"
)

// egress.echoURL and egress.quarantine reach the manager as it parses its
// flags: off and the manager's own default unless set, exactly the value
// when set, and crawler Pods then get the echo URL (the Pod builder's own
// test checks --expect-egress-ip beside it).
func TestEgressCheckValues(t *testing.T) {
	for _, tc := range []struct {
		name       string
		values     map[string]any
		echo       string
		quarantine time.Duration
	}{
		{"defaults: no check", nil, "", egress.DefaultQuarantine},
		{"an https echo", map[string]any{"egress": map[string]any{"echoURL": "https://echo.bot.lohisoft.com/ip", "quarantine": "90s"}},
			"https://echo.bot.lohisoft.com/ip", 90 * time.Second},
		{"an http echo", map[string]any{"egress": map[string]any{"echoURL": "http://echo.world.example:8080/"}},
			"http://echo.world.example:8080/", egress.DefaultQuarantine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := managerOptions(t, find(mustRender(t, tc.values), "Deployment", ""))
			if o.Pod.EgressEchoURL != tc.echo || o.EgressQuarantine != tc.quarantine {
				t.Errorf("manager gets echo URL %q and quarantine %v; want %q and %v", o.Pod.EgressEchoURL, o.EgressQuarantine, tc.echo, tc.quarantine)
			}
		})
	}
}

func TestSchemaRejectsBadEgressCheckValues(t *testing.T) {
	for name, v := range map[string]map[string]any{
		"echo without a scheme":       {"echoURL": "echo.bot.lohisoft.com"},
		"echo over ftp":               {"echoURL": "ftp://echo.bot.lohisoft.com/"},
		"echo with credentials":       {"echoURL": "https://user:secret@echo.bot.lohisoft.com/"},
		"echo with a space":           {"echoURL": "https://echo.bot.lohisoft.com/ ip"},
		"echo without a host":         {"echoURL": "https:///ip"},
		"quarantine not a duration":   {"quarantine": "five minutes"},
		"quarantine a bare number":    {"quarantine": "300"},
		"echo a list, not one string": {"echoURL": []any{"https://echo.bot.lohisoft.com/"}},
	} {
		_, err := render(t, map[string]any{"egress": v})
		if err == nil {
			t.Errorf("%s: the chart accepted egress %v", name, v)
			continue
		}
		key := "echoURL"
		if _, ok := v["quarantine"]; ok {
			key = "quarantine"
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("%s: error %q does not name %s", name, err, key)
		}
	}
}

// egress.nodeLostAfter reaches the manager as --egress-node-lost-after:
// the manager's own default unless set, exactly the value when set, and
// only a duration.
func TestNodeLostAfterValue(t *testing.T) {
	for _, tc := range []struct {
		values map[string]any
		want   time.Duration
	}{
		{nil, egress.DefaultLostAfter},
		{map[string]any{"egress": map[string]any{"nodeLostAfter": "90s"}}, 90 * time.Second},
	} {
		o := managerOptions(t, find(mustRender(t, tc.values), "Deployment", ""))
		if o.EgressNodeLostAfter != tc.want {
			t.Errorf("values %v: manager gets --egress-node-lost-after %v, want %v", tc.values, o.EgressNodeLostAfter, tc.want)
		}
	}
	for _, bad := range []any{"one minute", "60", 60} {
		if _, err := render(t, map[string]any{"egress": map[string]any{"nodeLostAfter": bad}}); err == nil || !strings.Contains(err.Error(), "nodeLostAfter") {
			t.Errorf("egress.nodeLostAfter %v: error %v, want one naming nodeLostAfter", bad, err)
		}
	}
}
