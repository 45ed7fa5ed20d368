package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/index/store/storetest"
	"github.com/lohisoft/crawl-operator/internal/testutil"
)

func open(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// sites returns the first n sites of the small corpus, each a SiteIndex
// of its own.
func sites(n int) []store.SiteDoc {
	var docs []store.SiteDoc
	_ = storetest.CorpusSmall.Generate(func(d store.SiteDoc) error {
		if len(docs) == n {
			return errors.New("enough")
		}
		d.Source = fmt.Sprintf("crawl/site-%d", len(docs))
		docs = append(docs, d)
		return nil
	})
	return docs
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
	db := s.(*Store).DB()
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

// TestUpgradeToValidators opens a file at schema version 3 (before page
// validators and crawl stats) and recrawls its page.
func TestUpgradeToValidators(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append(append(slices.Clone(migrations[:3]), "PRAGMA user_version = 3"), storetest.ValidatorsUpgradeRows...) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckUpgradedToValidators(t, s)
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

// TestWriteAheadLogStaysBounded writes sites from several goroutines while
// readers keep read transactions open, the pattern under which SQLite's
// own checkpoints never let the log start over, and checks that the
// store's checkpointer empties the log once it passes the limit, with the
// readers still reading.
func TestWriteAheadLogStaysBounded(t *testing.T) {
	limit, every := walLimit, walCheckEvery
	walLimit, walCheckEvery = 256<<10, 20*time.Millisecond
	t.Cleanup(func() { walLimit, walCheckEvery = limit, every })
	path := filepath.Join(t.TempDir(), "index.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for ctx.Err() == nil {
				tx, err := s.DB().BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
				if err != nil {
					continue
				}
				var n int
				_ = tx.QueryRowContext(ctx, "SELECT count(*) FROM pages").Scan(&n)
				time.Sleep(2 * time.Millisecond)
				_ = tx.Rollback()
			}
		})
	}
	defer func() { cancel(); readers.Wait() }()

	docs := make(chan store.SiteDoc)
	errs := make(chan error, 4)
	var writers sync.WaitGroup
	for range 4 {
		writers.Go(func() {
			for d := range docs {
				if err := s.ReplaceSite(context.Background(), d); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	n := 0
	_ = storetest.CorpusSmall.Generate(func(d store.SiteDoc) error {
		if n++; n > 300 {
			return errors.New("enough")
		}
		d.Source = fmt.Sprintf("crawl/site-%d", n)
		docs <- d
		return nil
	})
	close(docs)
	writers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "write-ahead log emptied", func() error {
		if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > walLimit {
			return fmt.Errorf("write-ahead log is %d bytes, limit %d", fi.Size(), walLimit)
		}
		return nil
	})
	var pages int
	if err := s.DB().QueryRow("SELECT count(*) FROM pages").Scan(&pages); err != nil || pages != 300*storetest.CorpusSmall.PagesPerSite {
		t.Fatalf("%d pages (%v), want %d", pages, err, 300*storetest.CorpusSmall.PagesPerSite)
	}
}

// TestManyWritersQueue: more writers at once than the busy timeout lets
// SQLite's lock hold off (16 writers, 30 ms of patience each) all get
// their write in, because the store queues them itself.
func TestManyWritersQueue(t *testing.T) {
	timeout := busyTimeout
	busyTimeout = 30 * time.Millisecond
	t.Cleanup(func() { busyTimeout = timeout })
	s := open(t)
	docs := sites(16)
	errs := make(chan error, len(docs))
	var writers sync.WaitGroup
	for _, d := range docs {
		writers.Go(func() { errs <- s.ReplaceSite(context.Background(), d) })
	}
	writers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestWriterGivesUpInTheQueue: a writer whose context ends while it waits
// behind another for the one writing transaction returns the context's
// error at once, and writes nothing; the writer before it is not disturbed.
func TestWriterGivesUpInTheQueue(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	docs := sites(2)
	// Another process's writer, as far as this store can tell: a raw
	// connection holding SQLite's write lock.
	lock, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// The first writer takes the store's queue and waits for the lock.
	first := make(chan error, 1)
	go func() { first <- s.ReplaceSite(ctx, docs[0]) }()
	testutil.Eventually(t, 10*time.Second, "first writer waiting for the file lock", func() error {
		if n := s.DB().Stats().InUse; n != 2 {
			return fmt.Errorf("%d connections in use", n)
		}
		return nil
	})
	// The second waits in the queue; its context ends there.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	err = s.ReplaceSite(cctx, docs[1])
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for the writer before it") {
		t.Fatalf("second writer = %v, want the context's deadline while queued", err)
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatalf("first writer: %v", err)
	}
	sources, err := s.Sources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 1 || sources[0].Source != docs[0].Source {
		t.Errorf("sources = %+v, want only %s", sources, docs[0].Source)
	}
}

// TestConnectionsAreCapped: however many searches and writes come at
// once, the store never holds more than maxOpenConns connections (each
// with its own page cache); those beyond wait for one and all finish.
func TestConnectionsAreCapped(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	docs := sites(8)
	// Hold every connection but one: a write still gets through on it.
	var held []*sql.Conn
	for range maxOpenConns - 1 {
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	if err := s.ReplaceSite(ctx, docs[0]); err != nil {
		t.Fatalf("a write with one connection left: %v", err)
	}
	// Hold the last one too: a search must now wait, not open a fifth.
	last, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held = append(held, last)
	// A search whose deadline passes in the pool gets the deadline (the
	// search API answers it 503 with Retry-After), not a fifth connection.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err = s.Search(short, "bread", 10)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a search past its deadline in the pool = %v, want context.DeadlineExceeded", err)
	}
	searched := make(chan error, 1)
	go func() {
		_, err := s.Search(ctx, "bread", 10)
		searched <- err
	}()
	select {
	case err := <-searched:
		t.Fatalf("a search ran with all %d connections held (err %v): the pool opened another", maxOpenConns, err)
	case <-time.After(200 * time.Millisecond):
	}
	if open := s.DB().Stats().OpenConnections; open != maxOpenConns {
		t.Fatalf("%d connections open, want %d", open, maxOpenConns)
	}
	for _, c := range held {
		c.Close()
	}
	if err := <-searched; err != nil {
		t.Fatalf("the waiting search: %v", err)
	}
	// A burst: 32 searches and the other writes at once all finish, and
	// the pool never went past the cap.
	stop := make(chan struct{})
	peak := make(chan int)
	go func() {
		most := 0
		for {
			most = max(most, s.DB().Stats().OpenConnections)
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	errs := make(chan error, 32+len(docs))
	var all sync.WaitGroup
	for i := range 32 {
		all.Go(func() {
			_, err := s.Search(ctx, []string{"bread", "rye", "oven", "flour"}[i%4], 10)
			errs <- err
		})
	}
	for _, d := range docs[1:] {
		all.Go(func() { errs <- s.ReplaceSite(ctx, d) })
	}
	all.Wait()
	close(stop)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if most := <-peak; most > maxOpenConns {
		t.Errorf("%d connections open at once during the burst, more than %d", most, maxOpenConns)
	}
}

// TestIdleConnectionsClose: connections opened for searches at once are
// closed once idle, and with them their page caches.
func TestIdleConnectionsClose(t *testing.T) {
	life := idleConnLife
	idleConnLife = 50 * time.Millisecond
	t.Cleanup(func() { idleConnLife = life })
	s := open(t)
	ctx := context.Background()
	// Hold three connections at once, so the pool has to open them.
	var conns []*sql.Conn
	for range 3 {
		c, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		var n int
		if err := c.QueryRowContext(ctx, "SELECT count(*) FROM pages").Scan(&n); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if open := s.DB().Stats().OpenConnections; open < 2 {
		t.Fatalf("%d connections open after use, want the pool's idle ones", open)
	}
	testutil.Eventually(t, 10*time.Second, "idle connections closed", func() error {
		if open := s.DB().Stats().OpenConnections; open != 0 {
			return fmt.Errorf("%d connections still open", open)
		}
		return nil
	})
}
