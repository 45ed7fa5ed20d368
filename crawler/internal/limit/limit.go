// Package limit caps how much is read from a stream without ending it
// quietly: a reader cut at a limit says so, so that the last item read
// before the cut (a URL, a line) is not taken for a whole one.
package limit

import "io"

// Reader returns a reader of r's first n bytes that fails with err, rather
// than io.EOF, if r has more.
func Reader(r io.Reader, n int64, err error) io.Reader {
	return &reader{r: r, left: n, err: err}
}

type reader struct {
	r    io.Reader
	left int64
	err  error
}

func (l *reader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(l.r, one[:]); n == 0 {
			return 0, io.EOF
		}
		return 0, l.err
	}
	p = p[:min(int64(len(p)), l.left)]
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
