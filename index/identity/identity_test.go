package identity

import (
	"flag"
	"reflect"
	"strings"
	"testing"
)

func TestDefaultIsThePublishedIdentity(t *testing.T) {
	id := Default()
	if err := id.Validate(); err != nil {
		t.Fatal(err)
	}
	want := Identity{
		Operator: "LohiSoft s.r.o.", Contact: "message@lohisoft.com",
		UserAgent:       "LohiSoftBot/1.0 (+https://lohisoft.com/bot)",
		OtherUserAgents: []string{"LohiSoftBot/1.0 (+message@lohisoft.com)"},
		ProductToken:    "LohiSoftBot", HostnameSuffix: ".bot.lohisoft.com", MaxPages: 20,
		IPsURL: "https://lohisoft.com/bot/ips.json",
	}
	if !reflect.DeepEqual(id, want) {
		t.Errorf("Default() =\n%+v\nwant the facts of the published page\n%+v", id, want)
	}
}

func TestValidate(t *testing.T) {
	for name, tc := range map[string]struct {
		mod  func(*Identity)
		want string
	}{
		"no operator":          {func(id *Identity) { id.Operator = " " }, "operator"},
		"contact with name":    {func(id *Identity) { id.Contact = "Bot <bot@example.org>" }, "contact"},
		"contact not an email": {func(id *Identity) { id.Contact = "example.org" }, "contact"},
		"UA without the token": {func(id *Identity) { id.UserAgent = "Mozilla/5.0 (compatible)" }, "product token"},
		"old UA without token": {func(id *Identity) { id.OtherUserAgents = []string{"lohisoftbot/0.9"} }, "product token"},
		"suffix without dot":   {func(id *Identity) { id.HostnameSuffix = "bot.lohisoft.com" }, "hostname suffix"},
		"suffix a TLD":         {func(id *Identity) { id.HostnameSuffix = ".com" }, "hostname suffix"},
		"suffix trailing dot":  {func(id *Identity) { id.HostnameSuffix = ".bot.lohisoft.com." }, "hostname suffix"},
		"suffix upper case":    {func(id *Identity) { id.HostnameSuffix = ".Bot.lohisoft.com" }, "lower case"},
		"budget zero":          {func(id *Identity) { id.MaxPages = 0 }, "budget"},
		"budget above crawler": {func(id *Identity) { id.MaxPages = 21 }, "budget"},
		"IP list over http":    {func(id *Identity) { id.IPsURL = "http://lohisoft.com/bot/ips.json" }, "https"},
		"IP list URL relative": {func(id *Identity) { id.IPsURL = "/bot/ips.json" }, "https"},
	} {
		id := Default()
		tc.mod(&id)
		if err := id.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error about %q", name, err, tc.want)
		}
	}
}

func TestBindFlags(t *testing.T) {
	id := Default()
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	id.BindFlags(fs)
	if err := fs.Parse([]string{"--bot-operator=Example Ltd", "--bot-contact=a@example.org", "--bot-hostname-suffix=.crawl.example.org",
		"--bot-ips-url=https://example.org/ips.json",
		"--bot-legacy-user-agents=LohiSoftBot/0.9, LohiSoftBot/0.8 (+a@example.org)"}); err != nil {
		t.Fatal(err)
	}
	if id.Operator != "Example Ltd" || id.Contact != "a@example.org" || id.HostnameSuffix != ".crawl.example.org" ||
		id.IPsURL != "https://example.org/ips.json" ||
		!reflect.DeepEqual(id.OtherUserAgents, []string{"LohiSoftBot/0.9", "LohiSoftBot/0.8 (+a@example.org)"}) {
		t.Errorf("after flags: %+v", id)
	}
	// An empty value lists no older user-agents at all.
	id = Default()
	fs = flag.NewFlagSet("manager", flag.ContinueOnError)
	id.BindFlags(fs)
	if err := fs.Parse([]string{"--bot-legacy-user-agents="}); err != nil || len(id.OtherUserAgents) != 0 {
		t.Errorf("--bot-legacy-user-agents= left %q (%v)", id.OtherUserAgents, err)
	}
	// A comma inside a user-agent splits it, and validation says so.
	id = Default()
	fs = flag.NewFlagSet("manager", flag.ContinueOnError)
	id.BindFlags(fs)
	if err := fs.Parse([]string{"--bot-legacy-user-agents=LohiSoftBot/0.9 (compatible, +a@example.org)"}); err != nil {
		t.Fatal(err)
	}
	if err := id.Validate(); err == nil {
		t.Errorf("a user-agent split at its comma passed validation: %q", id.OtherUserAgents)
	}
	// Without flags the defaults stay.
	id = Default()
	fs = flag.NewFlagSet("manager", flag.ContinueOnError)
	id.BindFlags(fs)
	if err := fs.Parse(nil); err != nil || !reflect.DeepEqual(id, Default()) {
		t.Errorf("defaults changed: %+v", id)
	}
}
