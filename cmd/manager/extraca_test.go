package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/testutil/testca"
)

// The manager process refuses to start on a --crawler-extra-ca-file that
// crawlers could not use, and says which flag and which file.
func TestManagerRefusesAnUnusableExtraCAFile(t *testing.T) {
	ca := testca.New(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name    string
		content string // "" leaves the file absent
		want    string
	}{
		{"unreadable", "", "no such file or directory"},
		{"no CERTIFICATE block", "just text\n", "no PEM CERTIFICATE block"},
		{"a block that does not parse", "-----BEGIN CERTIFICATE-----\nbm90IERFUg==\n-----END CERTIFICATE-----\n", "certificate 1:"},
		{"over 64 KiB", strings.Repeat(ca.PEM, 64<<10/len(ca.PEM)+1), "over the limit of 65536"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".crt")
			if tt.content != "" {
				if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := startReplica(t, "refused", "--crawler-extra-ca-file="+path)
			select {
			case err := <-r.exited:
				r.exited <- err
				if err == nil {
					t.Fatal("the manager exited 0")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the manager started")
			}
			b, _ := os.ReadFile(r.log)
			if out := string(b); !strings.Contains(out, "manager: --crawler-extra-ca-file") || !strings.Contains(out, path) || !strings.Contains(out, tt.want) {
				t.Errorf("output %q: want the flag, %s and %q", out, path, tt.want)
			}
		})
	}
}
