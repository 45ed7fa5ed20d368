package robots

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"testing"
)

// ConformanceCase is one case of testdata/robots-conformance.json (RFC 9309
// examples and Google's reference parser tests).
type ConformanceCase struct {
	ID           string  `json:"id"`
	Source       string  `json:"source"`
	Robots       *string `json:"robots"`
	RobotsBase64 string  `json:"robotsBase64"`
	Agent        string  `json:"agent"`
	URL          string  `json:"url"`
	Allowed      bool    `json:"allowed"`
}

// Body returns the exact robots.txt bytes of the case.
func (c ConformanceCase) Body(t testing.TB) []byte {
	if c.RobotsBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(c.RobotsBase64)
		if err != nil {
			t.Fatalf("%s: bad base64: %v", c.ID, err)
		}
		return b
	}
	if c.Robots == nil {
		t.Fatalf("%s: neither robots nor robotsBase64", c.ID)
	}
	return []byte(*c.Robots)
}

func loadConformance(t testing.TB) []ConformanceCase {
	raw, err := os.ReadFile("testdata/robots-conformance.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []ConformanceCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("no conformance cases")
	}
	return doc.Cases
}

// TestConformance runs every case through the path `crawler robots` uses:
// a 200 response classified by FromStatus, then Policy.Allowed.
func TestConformance(t *testing.T) {
	for _, c := range loadConformance(t) {
		t.Run(c.ID, func(t *testing.T) {
			got := FromStatus(200, c.Body(t)).Allowed(c.Agent, c.URL)
			if got != c.Allowed {
				t.Errorf("%s (%s): agent %q url %q: allowed=%v, want %v", c.ID, c.Source, c.Agent, c.URL, got, c.Allowed)
			}
		})
	}
}
