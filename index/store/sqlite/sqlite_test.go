package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/sqlstore"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
)

func open(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return open(t) },
		Dump: dump,
	})
}

// dump reads every table, FTS5's shadow tables included.
func dump(t *testing.T, s store.Store) storetest.Dump {
	t.Helper()
	db := s.(*sqlstore.Store).DB()
	tables := storetest.TableNames(t, db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	return storetest.DumpTables(t, db, tables, func(table string) string { return `SELECT * FROM "` + table + `"` })
}

func TestMigrationsAreIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := context.Background()
	for range 3 {
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		var v int
		if err := s.DB().QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil || v != len(migrations) {
			t.Errorf("user_version = %d, %v; want %d", v, err, len(migrations))
		}
		s.Close()
	}
}

// TestUpgradeFromFTS5 opens a file the previous schema wrote (one
// migration, FTS5) and finds its pages through the postings the upgrade
// built.
func TestUpgradeFromFTS5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		migrations[0],
		"PRAGMA user_version = 1",
		`INSERT INTO sites VALUES ('https://a.example:443', 'a.example', 'ns/a', NULL)`,
		`INSERT INTO pages (id, site, url, status_code, title, description, h1, h2, h3, anchors, ext_anchors)
			VALUES (1, 'https://a.example:443', 'https://a.example/', 200, 'Káva', '', '[]', '[]', '[]', '["otter den"]', '[]')`,
		`INSERT INTO pages_fts (rowid, title, headings, anchors, description) VALUES (1, 'káva', '', 'otter den', '')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckUpgraded(t, s)
}

func TestRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, path); err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than the code")
	}
}

func BenchmarkSearch(b *testing.B) {
	storetest.BenchmarkSearch(b, open(b))
}
