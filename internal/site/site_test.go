package site

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "https://Example.COM/path?q=1", want: "https://example.com:443"},
		{in: "http://example.com", want: "http://example.com:80"},
		{in: "http://example.com.:8080/", want: "http://example.com:8080"},
		{in: "HTTPS://1.2.3.4/", want: "https://1.2.3.4:443"},
		{in: "ftp://example.com/", wantErr: true},
		{in: "http://[::1]/", wantErr: true},
		{in: "http:///path", wantErr: true},
		{in: "example.com", wantErr: true},
		{in: "http://%zz/", wantErr: true},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want error", tt.in, got)
			}
			continue
		}
		if err != nil || got.String() != tt.want {
			t.Errorf("Parse(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestInDomain(t *testing.T) {
	tests := []struct {
		host, domain string
		want         bool
	}{
		{"example.com", "example.com", true},
		{"www.example.com", "example.com", true},
		{"a.b.example.com", "example.com", true},
		{"WWW.Example.com.", "example.com", true},
		{"notexample.com", "example.com", false},
		{"example.com.evil.net", "example.com", false},
		{"example.com", "www.example.com", false},
		{"", "example.com", false},
		{"example.com", "", false},
		{"1.2.3.4", "1.2.3.4", true},
		{"11.2.3.4", "1.2.3.4", false},
		{"10.0.0.1", "0.0.1", false},
		{"10.0.0.1", "0.1", false},
	}
	for _, tt := range tests {
		if got := InDomain(tt.host, tt.domain); got != tt.want {
			t.Errorf("InDomain(%q, %q) = %v, want %v", tt.host, tt.domain, got, tt.want)
		}
	}
}

// A plain-HTTP site upgrades only to https on the same host, both on their
// default ports: anything else a redirect does makes another site, which a
// target must not take over.
func TestSecureUpgrade(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"http://example.com/", "https://example.com/", true},
		{"http://example.com:80/a", "https://example.com:443/b?q", true},
		{"HTTP://Example.com./", "https://example.com/", true},
		{"http://1.2.3.4/", "https://1.2.3.4/", true},
		{"https://example.com/", "https://example.com/", false}, // nothing to upgrade
		{"https://example.com/", "http://example.com/", false},  // a downgrade
		{"http://example.com/", "http://example.com/", false},   // the same site
		{"http://example.com:8080/", "https://example.com/", false},
		{"http://example.com/", "https://example.com:8443/", false},
		{"http://example.com/", "https://www.example.com/", false},
		{"http://www.example.com/", "https://example.com/", false},
		{"http://example.com/", "https://example.com.evil.net/", false},
		{"http://example.com/", "ftp://example.com/", false},
		{"http://example.com/", "https://[::1]/", false},
		{"http://example.com/", "", false},
		{"", "https://example.com/", false},
	}
	for _, tt := range tests {
		if got := IsSecureUpgrade(tt.from, tt.to); got != tt.want {
			t.Errorf("IsSecureUpgrade(%q, %q) = %v, want %v", tt.from, tt.to, got, tt.want)
		}
	}
}

func TestCrawled(t *testing.T) {
	mustParse := func(raw string) Site {
		s, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tests := []struct {
		owner, reported, want string
	}{
		{"http://example.com/", "https://example.com:443", "https://example.com:443"},
		{"http://example.com/", "http://example.com:80", "http://example.com:80"},
		{"http://example.com/", "https://other.example:443", "http://example.com:80"},
		{"http://example.com/", "https://example.com:8443", "http://example.com:80"},
		{"http://example.com/", "garbage", "http://example.com:80"},
		{"http://example.com/", "", "http://example.com:80"},
		{"https://example.com/", "http://example.com:80", "https://example.com:443"},
		{"http://example.com:8080/", "https://example.com:443", "http://example.com:8080"},
	}
	for _, tt := range tests {
		if got := mustParse(tt.owner).Crawled(tt.reported).String(); got != tt.want {
			t.Errorf("Crawled(%q) of %s = %s, want %s", tt.reported, tt.owner, got, tt.want)
		}
	}
}
