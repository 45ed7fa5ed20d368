//go:build bench1m

package postgres

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
)

// bench1MSchema holds the cached 1,000,000-page corpus on the test server;
// its comment records that the build finished, and how long it took.
var bench1MSchema = "bench1m_" + strings.ReplaceAll(storetest.CorpusVersion, "-", "_")

// TestSearch1M measures the query mix on the 1,000,000-page corpus (make
// bench-search), building it once into bench1MSchema.
func TestSearch1M(t *testing.T) {
	ctx := context.Background()
	admin := adminDB(t)
	var note sql.NullString
	err := admin.QueryRowContext(ctx, "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", bench1MSchema).Scan(&note)
	if err != nil || !note.Valid {
		// No finished build: create the schema, or resume an interrupted
		// build after the sites it has (minus one, as sites are written
		// in order and a rewrite changes nothing).
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA IF NOT EXISTS "+bench1MSchema); err != nil {
			t.Fatal(err)
		}
		s, err := Open(ctx, bench1MDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		var done int
		if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sites").Scan(&done); err != nil {
			t.Fatal(err)
		}
		if done > 0 {
			t.Logf("resuming the build after %d sites", done-1)
		}
		took := storetest.BuildCorpus(t, s, storetest.Corpus1M, max(done-1, 0))
		// Index-only scans of the postings need the visibility map, which
		// autovacuum keeps in production; the test server runs without it.
		if _, err := s.DB().ExecContext(ctx, "VACUUM (ANALYZE) sites, pages, links, postings"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		note.String = "built in " + took.Round(time.Second).String()
		if done > 0 {
			note.String += " (resumed after " + strconv.Itoa(done-1) + " sites)"
		}
		if _, err := admin.ExecContext(ctx, "COMMENT ON SCHEMA "+bench1MSchema+" IS '"+note.String+"'"); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, bench1MDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var size string
	if err := s.DB().QueryRowContext(ctx, `SELECT pg_size_pretty(SUM(pg_total_relation_size(c.oid)))
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, bench1MSchema).Scan(&size); err != nil {
		t.Fatal(err)
	}
	t.Logf("corpus in schema %s: %d pages, %s, %s with indexes", bench1MSchema, storetest.Corpus1M.Pages(), note.String, size)
	// The build retries across server restarts by other tests; the
	// measurement, a minute or two, keeps them waiting instead.
	t.Run("measure", func(t *testing.T) {
		pgtest.Hold(t)
		storetest.MeasureQueryMix(t, s, bench1MRounds())
	})
}

// TestDrop1M drops the cached corpus (make bench-search-clean).
func TestDrop1M(t *testing.T) {
	if _, err := adminDB(t).ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+bench1MSchema+" CASCADE"); err != nil {
		t.Fatal(err)
	}
}

func adminDB(t *testing.T) *sql.DB {
	db, err := sql.Open("pgx", pgtest.ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func bench1MDSN(t *testing.T) string {
	u, err := url.Parse(pgtest.ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", bench1MSchema)
	u.RawQuery = q.Encode()
	return u.String()
}

func bench1MRounds() int {
	if n, err := strconv.Atoi(os.Getenv("BENCH1M_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 200
}
