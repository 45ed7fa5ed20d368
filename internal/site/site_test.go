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
