package percent

import (
	"strings"
	"testing"
)

// RFC 3986 §5.2.4 walks two paths through the algorithm; the rest are the
// corner cases the crawler relies on.
func TestRemoveDotSegments(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b/c/./../../g":   "/a/g",  // RFC 3986 §5.2.4
		"mid/content=5/../6": "mid/6", // RFC 3986 §5.2.4
		"":                   "",
		"/":                  "/",
		"/.":                 "/",
		"/..":                "/",
		"/./":                "/",
		"/../":               "/",
		"/../../disallowed":  "/disallowed",
		"/a/./b":             "/a/b",
		"/a/../b":            "/b",
		"/a/b/..":            "/a/",
		"/a/b/.":             "/a/b/",
		"/a//../b":           "/a/b", // the empty segment is the one removed
		"/.//disallowed/x":   "//disallowed/x",
		"/a//b//":            "/a//b//",
		"/a/.b/..c/.../d.":   "/a/.b/..c/.../d.",
		"/a/..%2Fb":          "/a/..%2Fb",   // an encoded slash is no separator
		"/a/%2e%2e/b":        "/a/%2e%2e/b", // callers decode first
		"/a;x/../b":          "/b",
		"/a/..;x/b":          "/a/..;x/b",
		".":                  "",
		"..":                 "",
		"../a":               "a",
		"./a/../../b":        "/b", // as the RFC algorithm has it
	} {
		got := RemoveDotSegments(in)
		if got != want {
			t.Errorf("RemoveDotSegments(%q) = %q, want %q", in, got, want)
		}
		if strings.HasPrefix(in, "/") && HasDotSegment(got) {
			t.Errorf("RemoveDotSegments(%q) = %q still has a dot segment", in, got)
		}
		if again := RemoveDotSegments(got); again != got {
			t.Errorf("not idempotent on %q: %q then %q", in, got, again)
		}
	}
}

func FuzzRemoveDotSegments(f *testing.F) {
	for _, s := range []string{"/a/b/c/./../../g", "/../..//./x/", "/a//../b", "/..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !strings.HasPrefix(in, "/") {
			return
		}
		got := RemoveDotSegments(in)
		if !strings.HasPrefix(got, "/") || HasDotSegment(got) || RemoveDotSegments(got) != got {
			t.Fatalf("RemoveDotSegments(%q) = %q", in, got)
		}
	})
}
