package robots

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
)

var errTest = errors.New("connection refused")

func TestFetchRedirects(t *testing.T) {
	site, _ := url.Parse("http://a.test:8080/start")
	var asked []string
	chain := func(n int) GetFunc {
		return func(ctx context.Context, u *url.URL) (*Response, error) {
			asked = append(asked, u.String())
			if len(asked) <= n {
				return &Response{Status: 301, Location: fmt.Sprintf("/r%d", len(asked))}, nil
			}
			return &Response{Status: 200, Body: []byte("User-agent: *\nDisallow: /no\n")}, nil
		}
	}
	asked = nil
	p := Fetch(context.Background(), chain(5), site)
	if p.Access != UseRules || p.Allowed("x", "/no") || len(asked) != 6 {
		t.Fatalf("5 redirects: %+v after %v", p, asked)
	}
	if asked[0] != "http://a.test:8080/robots.txt" || asked[1] != "http://a.test:8080/r1" {
		t.Fatalf("wrong URLs asked: %v", asked)
	}
	asked = nil
	p = Fetch(context.Background(), chain(6), site)
	if p.Access != FullAllow || len(asked) != 6 {
		t.Fatalf("6 redirects: %+v after %d requests", p, len(asked))
	}
	p = Fetch(context.Background(), func(context.Context, *url.URL) (*Response, error) { return nil, errTest }, site)
	if p.Access != FullDisallow || p.Status != 0 {
		t.Fatalf("network error: %+v", p)
	}
	p = Fetch(context.Background(), func(context.Context, *url.URL) (*Response, error) {
		return &Response{Status: 302}, nil
	}, site)
	if p.Access != FullAllow {
		t.Fatalf("redirect without Location: %+v", p)
	}
}
