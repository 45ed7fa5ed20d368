package operator

import "testing"

// The Go runtime's soft limit follows the container's limit, which the
// chart passes in bytes; anything else is a clear error, never a guess.
func TestGoMemLimit(t *testing.T) {
	const mi = 1 << 20
	for _, tc := range []struct {
		name            string
		explicit, limit string
		ratio           float64
		want            int64
		wantErr         bool
	}{
		{"the chart's 512Mi at 0.9", "", "536870912", 0.9, 483183820, false},
		{"the whole limit", "", "268435456", 1, 256 * mi, false},
		{"GOMEMLIMIT set by hand wins", "400MiB", "536870912", 0.9, 0, false},
		{"no limit known", "", "", 0.9, 0, false},
		{"spaces around the number", "", " 1048576\n", 0.5, mi / 2, false},
		{"a quantity, not bytes", "", "512Mi", 0.9, 0, true},
		{"zero", "", "0", 0.9, 0, true},
		{"negative", "", "-1", 0.9, 0, true},
		{"overflow", "", "99999999999999999999", 0.9, 0, true},
		{"ratio 0", "", "536870912", 0, 0, true},
		{"ratio above 1", "", "536870912", 1.5, 0, true},
		{"ratio NaN-like negative", "", "536870912", -0.1, 0, true},
		{"a bad ratio fails even with GOMEMLIMIT set", "400MiB", "", 2, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ManagerOptions{MemoryLimitRatio: tc.ratio}.GoMemLimit(tc.explicit, tc.limit)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("GoMemLimit(%q, %q) at %v = %d, %v; want %d, error %t", tc.explicit, tc.limit, tc.ratio, got, err, tc.want, tc.wantErr)
			}
		})
	}
}
