package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/postgres/pgtest"
	"github.com/lohisoft/crawl-operator/index/store/sqlstore"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
)

func open(t testing.TB) *sqlstore.Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // runs before the schema is dropped
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, storetest.Backend{
		Open: func(t *testing.T) store.Store { return open(t) },
		Dump: dump,
	})
}

// dump reads every table of the test schema.
func dump(t *testing.T, s store.Store) storetest.Dump {
	t.Helper()
	db := s.(*sqlstore.Store).DB()
	tables := storetest.TableNames(t, db,
		"SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
	return storetest.DumpTables(t, db, tables, func(table string) string { return `SELECT * FROM "` + table + `"` })
}

// TestUpgradeFromTSVector opens a database the previous schema wrote (one
// migration, a tsvector column) and finds its pages through the postings
// the upgrade built.
func TestUpgradeFromTSVector(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE TABLE index_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
		migrations[0],
		"INSERT INTO index_schema_migrations (version) VALUES (1)",
		`INSERT INTO sites VALUES ('https://a.example:443', 'a.example', 'ns/a', NULL)`,
		`INSERT INTO pages (site, url, status_code, title, description, h1, h2, h3, anchors, ext_anchors, search)
			VALUES ('https://a.example:443', 'https://a.example/', 200, 'Káva', '', '[]', '[]', '[]', '["otter den"]', '[]', to_tsvector('simple', 'káva'))`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckUpgraded(t, s)
}

// TestUpgradeToValidators opens a database at schema version 3 (before
// page validators and crawl stats) and recrawls its page.
func TestUpgradeToValidators(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	queries := []string{"CREATE TABLE index_schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"}
	for i, m := range migrations[:3] {
		queries = append(queries, m, fmt.Sprintf("INSERT INTO index_schema_migrations (version) VALUES (%d)", i+1))
	}
	for _, q := range append(queries, storetest.ValidatorsUpgradeRows...) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckUpgradedToValidators(t, s)
}

func TestMigrationsAreIdempotentAndSerialised(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	// Replicas starting at once: each migration must still run once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			s, err := Open(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Open: %v", err)
	}
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, err := Version(ctx, s); err != nil || v != len(migrations) {
		t.Errorf("Version = %d, %v; want %d", v, err, len(migrations))
	}
	var rows int
	if err := s.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM index_schema_migrations").Scan(&rows); err != nil || rows != len(migrations) {
		t.Errorf("%d migration rows, %v; want %d", rows, err, len(migrations))
	}
}

func TestRefusesNewerSchema(t *testing.T) {
	dsn := pgtest.Schema(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO index_schema_migrations (version) VALUES (99)"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err := Open(ctx, dsn); err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than the code")
	}
}

func TestUnreachableServerIsAnError(t *testing.T) {
	u, _ := url.Parse(pgtest.DefaultDSN)
	u.Host = "127.0.0.1:1" // nothing listens on port 1
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	if s, err := Open(ctx, u.String()); err == nil {
		s.Close()
		t.Fatal("Open succeeded without a server")
	}
}

func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT 1":                     "SELECT 1",
		"a = ? AND b = ?":              "a = $1 AND b = $2",
		"INSERT INTO t VALUES (?,?,?)": "INSERT INTO t VALUES ($1,$2,$3)",
	} {
		if got := (dialect{}).Rebind(in); got != want {
			t.Errorf("Rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	storetest.BenchmarkSearch(b, open(b))
}
