//go:build bench1m

package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store/storetest"
)

// TestSearch1M measures the query mix on the 1,000,000-page corpus (make
// bench-search). The corpus is built once into a cached file, $BENCH1M_DIR
// or the user cache directory, and reused while CorpusVersion holds.
func TestSearch1M(t *testing.T) {
	path := bench1MPath(t)
	built := path + ".built"
	ctx := context.Background()
	if _, err := os.Stat(built); err != nil {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		took := storetest.BuildCorpus(t, s, storetest.Corpus1M, 0)
		if _, err := s.DB().ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.WriteFile(built, fmt.Appendf(nil, "built in %s\n", took.Round(time.Second)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	note, _ := os.ReadFile(built)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus %s: %d pages, %s, %.2f GB", path, storetest.Corpus1M.Pages(), note, float64(fi.Size())/1e9)
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.MeasureQueryMix(t, s, bench1MRounds())
}

// TestDrop1M removes the cached corpus (make bench-search-clean).
func TestDrop1M(t *testing.T) {
	path := bench1MPath(t)
	for _, suffix := range []string{"", "-wal", "-shm", ".built"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Error(err)
		}
	}
}

func bench1MPath(t *testing.T) string {
	dir := os.Getenv("BENCH1M_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(cache, "crawl-operator", "bench1m")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, storetest.CorpusVersion+".db")
}

func bench1MRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH1M_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 200
}
