package robots

import (
	"slices"
	"strings"
	"testing"

	"github.com/temoto/robotstxt"
)

// These tests pin every way github.com/temoto/robotstxt v1.1.2 deviates from
// RFC 9309 where this package does the work instead. Each asserts temoto's
// raw (wrong) answer next to ours. When a temoto release fixes one, its
// assertion here fails: that is the signal to hand that piece back to temoto
// and delete the workaround.

// temotoAllowed is temoto's full answer for a 200 response, with a parse
// error reported as such (temoto then has no rules at all).
func temotoAllowed(t *testing.T, body, agent, target string) (allowed bool, parseErr error) {
	t.Helper()
	r, err := robotstxt.FromStatusAndBytes(200, []byte(body))
	if err != nil {
		return false, err
	}
	return r.TestAgent(PathOf(target), agent), nil
}

type deviation struct {
	name        string
	robots      string
	agent, url  string
	want        bool // RFC 9309 answer (ours)
	temotoErr   bool // temoto rejects the whole file
	temotoAllow bool // temoto's answer when it parses
}

var temotoDeviations = []deviation{
	{name: "rule before first user-agent discards the file", robots: "Disallow: /x\nUser-agent: *\nDisallow: /private\n", agent: "LohiSoftBot", url: "/private", want: false, temotoErr: true},
	{name: "Crawl-delay 10s discards the file", robots: "User-agent: *\nCrawl-delay: 10s\nDisallow: /private\n", agent: "LohiSoftBot", url: "/private", want: false, temotoErr: true},
	{name: "partial BOM discards the file", robots: "\xEF\xBBUser-agent: *\nDisallow: /private\n", agent: "LohiSoftBot", url: "/private", want: false, temotoErr: true},
	{name: "tie goes to first rule instead of allow", robots: "User-agent: *\nDisallow: /page\nAllow: /page\n", agent: "LohiSoftBot", url: "/page", want: true, temotoAllow: false},
	{name: "* pattern not anchored at path start", robots: "User-agent: *\nDisallow: /fish*.php\n", agent: "LohiSoftBot", url: "/cat/fish.php", want: true, temotoAllow: false},
	{name: "$ in the middle anchors", robots: "User-agent: *\nDisallow: /a$b\n", agent: "LohiSoftBot", url: "/a$b", want: false, temotoAllow: true},
	{name: "# without a space is not a comment", robots: "User-agent: *\nDisallow: /foo#comment\n", agent: "LohiSoftBot", url: "/foo", want: false, temotoAllow: true},
	{name: "user-agent is a prefix match", robots: "User-agent: L\nDisallow: /\n", agent: "LohiSoftBot", url: "/page", want: true, temotoAllow: false},
	{name: "user-agent with version does not match", robots: "User-agent: LohiSoftBot/1.0\nDisallow: /\n", agent: "LohiSoftBot", url: "/page", want: false, temotoAllow: true},
	{name: "Crawl-delay ends a group", robots: "User-agent: LohiSoftBot\nCrawl-delay: 1\nUser-agent: OtherBot\nDisallow: /\n", agent: "LohiSoftBot", url: "/page", want: false, temotoAllow: true},
	{name: "no percent-encoding normalisation (UTF-8 pattern)", robots: "User-agent: *\nDisallow: /\nAllow: /foo/ツ\n", agent: "LohiSoftBot", url: "/foo/%E3%83%84", want: true, temotoAllow: false},
	{name: "no percent-encoding normalisation (unreserved escape)", robots: "User-agent: *\nDisallow: /baz\n", agent: "LohiSoftBot", url: "/%62%61%7A", want: false, temotoAllow: true},
	{name: "no size limit", robots: "User-agent: *\nDisallow: /private\n" + strings.Repeat("#", MaxSize) + "\nUser-agent: *\nAllow: /private/\n", agent: "LohiSoftBot", url: "/private/x", want: false, temotoAllow: true},
	{name: "empty last group of the agent does not shadow *", robots: "User-agent: *\nDisallow: /\n\nUser-agent: LohiSoftBot\n", agent: "LohiSoftBot", url: "/page", want: true, temotoAllow: false},
	{name: "/robots.txt not implicitly allowed", robots: "User-agent: *\nDisallow: /\n", agent: "LohiSoftBot", url: "/robots.txt", want: true, temotoAllow: false},
}

func TestTemotoDeviationsPinned(t *testing.T) {
	for _, d := range temotoDeviations {
		t.Run(d.name, func(t *testing.T) {
			if got := FromStatus(200, []byte(d.robots)).Allowed(d.agent, d.url); got != d.want {
				t.Errorf("ours: allowed=%v, want %v", got, d.want)
			}
			got, err := temotoAllowed(t, d.robots, d.agent, d.url)
			switch {
			case d.temotoErr && err == nil:
				t.Errorf("temoto now parses this file (allowed=%v): the workaround may be handed back", got)
			case !d.temotoErr && err != nil:
				t.Errorf("temoto now fails to parse: %v", err)
			case !d.temotoErr && got != d.temotoAllow:
				t.Errorf("temoto now answers %v (was %v): the workaround may be handed back", got, d.temotoAllow)
			case !d.temotoErr && got == d.want:
				t.Errorf("pinned deviation is not a deviation")
			}
		})
	}
}

// Status handling: temoto's FromStatusAndBytes is wrong for 5xx (through
// FindGroup().Test()), 429 and 3xx; FromStatus does it instead.
func TestTemotoStatusDeviationsPinned(t *testing.T) {
	r, err := robotstxt.FromStatusAndBytes(503, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.TestAgent("/page", "LohiSoftBot") {
		t.Error("temoto TestAgent on 503 allows (it used to disallow)")
	}
	if !r.FindGroup("LohiSoftBot").Test("/page") {
		t.Error("temoto 503 FindGroup().Test() no longer allows: may be handed back")
	}
	if FromStatus(503, nil).Allowed("LohiSoftBot", "/page") {
		t.Error("ours: 503 must disallow")
	}

	r, err = robotstxt.FromStatusAndBytes(429, nil)
	if err != nil || !r.TestAgent("/page", "LohiSoftBot") {
		t.Errorf("temoto 429 is no longer allow-all (err %v): may be handed back", err)
	}
	if FromStatus(429, nil).Allowed("LohiSoftBot", "/page") {
		t.Error("ours: 429 must disallow")
	}

	if _, err := robotstxt.FromStatusAndBytes(301, nil); err == nil {
		t.Error("temoto no longer errors on 3xx: may be handed back")
	}
	if p := FromStatus(301, nil); p.Access != FullAllow {
		t.Errorf("ours: too many redirects must be unavailable (full allow), got %v", p.Access)
	}
}

// TestTemotoOnConformance records which conformance cases temoto gets wrong,
// so the size of the gap is visible and any change in temoto shows up.
func TestTemotoOnConformance(t *testing.T) {
	var wrong []string
	for _, c := range loadConformance(t) {
		got, err := temotoAllowed(t, string(c.Body(t)), c.Agent, c.URL)
		if err != nil || got != c.Allowed {
			wrong = append(wrong, c.ID)
		}
	}
	pinned := []string{"G05", "G06", "G07", "G08", "G09", "G10", "G11", "G19", "G34", "G39", "G66", "R06"}
	if !slices.Equal(wrong, pinned) {
		t.Errorf("temoto is wrong on %v, pinned %v", wrong, pinned)
	}
}
