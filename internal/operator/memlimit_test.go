package operator

import (
	"testing"

	"github.com/lohisoft/crawl-operator/index"
)

// The Go runtime's soft limit follows the container's limit, which the
// chart passes in bytes; anything else is a clear error, never a guess.
func TestGoMemLimit(t *testing.T) {
	const mi = 1 << 20
	const sqliteCaches = 32 * mi
	for _, tc := range []struct {
		name            string
		explicit, limit string
		outside         int64
		ratio           float64
		want            int64
		wantErr         bool
	}{
		// 0.9 × (512 − 64) MiB: the binary's pages first.
		{"the chart's 512Mi at 0.9 on PostgreSQL", "", "536870912", 0, 0.9, 422785843, false},
		// 0.9 × (512 − 64 − 32) MiB.
		{"the chart's 512Mi at 0.9 on SQLite: its caches too", "", "536870912", sqliteCaches, 0.9, 392586854, false},
		{"the whole limit", "", "268435456", 0, 1, 192 * mi, false},
		{"GOMEMLIMIT set by hand wins", "400MiB", "536870912", sqliteCaches, 0.9, 0, false},
		{"no limit known", "", "", sqliteCaches, 0.9, 0, false},
		{"spaces around the number", "", " 1048576000\n", 0, 0.5, 468 * mi, false},
		{"a quantity, not bytes", "", "512Mi", 0, 0.9, 0, true},
		{"zero", "", "0", 0, 0.9, 0, true},
		{"negative", "", "-1", 0, 0.9, 0, true},
		{"overflow", "", "99999999999999999999", 0, 0.9, 0, true},
		{"too small for the binary", "", "67108864", 0, 0.9, 0, true},
		{"too small for SQLite's caches", "", "100663296", sqliteCaches, 0.9, 0, true},
		{"too small a heap left", "", "167772160", sqliteCaches, 0.9, 0, true},
		{"just enough heap left", "", "178257920", sqliteCaches, 0.9, 69835161, false},
		{"ratio 0", "", "536870912", 0, 0, 0, true},
		{"ratio above 1", "", "536870912", 0, 1.5, 0, true},
		{"ratio negative", "", "536870912", 0, -0.1, 0, true},
		{"a bad ratio fails even with GOMEMLIMIT set", "400MiB", "", 0, 2, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ManagerOptions{MemoryLimitRatio: tc.ratio}.GoMemLimit(tc.explicit, tc.limit, tc.outside)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("GoMemLimit(%q, %q, %d) at %v = %d, %v; want %d, error %t", tc.explicit, tc.limit, tc.outside, tc.ratio, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// The SQLite backend's bound is what its connections can hold: 4 caches
// of 8 MiB. PostgreSQL's memory is the server's.
func TestMemoryOutsideGoHeap(t *testing.T) {
	for dsn, want := range map[string]int64{
		"sqlite:///data/index.db":         32 << 20,
		"postgres://u@db.example/index":   0,
		"postgresql://u@db.example/index": 0,
		"not a dsn":                       0,
	} {
		if got := index.MemoryOutsideGoHeap(dsn); got != want {
			t.Errorf("MemoryOutsideGoHeap(%q) = %d, want %d", dsn, got, want)
		}
	}
}
