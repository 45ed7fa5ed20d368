package limit

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestReader(t *testing.T) {
	errBig := errors.New("too big")
	for _, c := range []struct {
		in   string
		n    int64
		want string
		err  error
	}{
		{"abc", 3, "abc", nil},
		{"abc", 5, "abc", nil},
		{"abcd", 3, "abc", errBig},
		{"", 0, "", nil},
		{"a", 0, "", errBig},
	} {
		for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
			got, err := io.ReadAll(Reader(r, c.n, errBig))
			if string(got) != c.want || !errors.Is(err, c.err) && (err != nil || c.err != nil) {
				t.Errorf("%q cut at %d: %q, %v; want %q, %v", c.in, c.n, got, err, c.want, c.err)
			}
		}
	}
}
