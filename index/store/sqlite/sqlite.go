// Package sqlite is the embedded search backend: one SQLite file, through
// modernc.org/sqlite (pure Go, no cgo), searched with sqlstore's postings.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/lohisoft/crawl-operator/index/store/sqlstore"
)

// migrations are applied in order; PRAGMA user_version counts how many a
// file has. Append, never edit.
var migrations = []string{
	`CREATE TABLE sites (
		site       TEXT PRIMARY KEY,
		host       TEXT NOT NULL,
		source     TEXT NOT NULL,
		crawled_at INTEGER
	);
	CREATE INDEX sites_host ON sites (host);
	CREATE INDEX sites_source ON sites (source);
	CREATE TABLE pages (
		id          INTEGER PRIMARY KEY,
		site        TEXT NOT NULL,
		url         TEXT NOT NULL UNIQUE,
		status_code INTEGER NOT NULL,
		title       TEXT NOT NULL,
		description TEXT NOT NULL,
		h1          TEXT NOT NULL,
		h2          TEXT NOT NULL,
		h3          TEXT NOT NULL,
		anchors     TEXT NOT NULL,
		ext_anchors TEXT NOT NULL,
		fetched_at  INTEGER
	);
	CREATE INDEX pages_site ON pages (site);
	CREATE TABLE links (
		source_site TEXT NOT NULL,
		target_site TEXT NOT NULL,
		target_url  TEXT NOT NULL,
		ord         INTEGER NOT NULL,
		anchor      TEXT NOT NULL
	);
	CREATE INDEX links_source ON links (source_site);
	CREATE INDEX links_target_site ON links (target_site);
	CREATE INDEX links_target_url ON links (target_url);
	-- The text is normalised in Go (store.DocumentOf); diacritics are kept
	-- so SQLite matches exactly what PostgreSQL matches.
	CREATE VIRTUAL TABLE pages_fts USING fts5 (
		title, headings, anchors, description,
		tokenize = 'unicode61 remove_diacritics 0'
	);
	-- Column weights of BM25: title, headings, anchors, description.
	INSERT INTO pages_fts (pages_fts, rank) VALUES ('rank', 'bm25(10.0, 4.0, 2.0, 1.0)');`,
	// The run the site's rows come from (store.SiteDoc.Run): a manager
	// start compares it with each SiteIndex instead of writing everything
	// again. Rows from before this migration have none; the syncer takes
	// those as held (their next crawl records its run).
	`ALTER TABLE sites ADD COLUMN run TEXT NOT NULL DEFAULT '';`,
	// Page languages, and the shared postings index (sqlstore) in place of
	// FTS5; Open fills it from the pages (sqlstore.Reindex).
	`ALTER TABLE pages ADD COLUMN lang TEXT NOT NULL DEFAULT '';
	CREATE TABLE postings (
		term    TEXT NOT NULL,
		page_id INTEGER NOT NULL,
		score   INTEGER NOT NULL,
		PRIMARY KEY (page_id, term)
	) WITHOUT ROWID;
	CREATE INDEX postings_term ON postings (term, score DESC, page_id);
	DROP TABLE pages_fts;`,
	// Conditional recrawl: each page's validators as the site sent them
	// (store.Page.ETag, LastModified; '' for none), and the stats of the
	// crawl the site's rows come from.
	`ALTER TABLE pages ADD COLUMN etag TEXT NOT NULL DEFAULT '';
	ALTER TABLE pages ADD COLUMN last_modified TEXT NOT NULL DEFAULT '';
	ALTER TABLE sites ADD COLUMN bytes_received INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE sites ADD COLUMN pages_unchanged INTEGER NOT NULL DEFAULT 0;`,
}

// postingsVersion is the first schema version with postings: a database
// migrated from before it is reindexed.
const postingsVersion = 3

// Store is the SQLite index: sqlstore's queries over one file, and the
// checkpointer that keeps the file's write-ahead log bounded.
type Store struct {
	*sqlstore.Store
	stop context.CancelFunc
	done chan struct{}
}

// Close stops the checkpointer and closes the database.
func (s *Store) Close() error {
	s.stop()
	<-s.done
	return s.Store.Close()
}

// The write-ahead log's bound. SQLite checkpoints the log into the
// database every 1,000 pages by itself, but a passive checkpoint stops at
// the oldest open read and the log starts over only once it is wholly
// checkpointed; with writers queued back to back and readers between them
// that never happens, so the log grows without end (64 writers of a second
// process left a 13 GB log beside a 250 MB database, and every read then
// searched it). So the store checks the log's size every walCheckEvery
// and, past walLimit, checkpoints it: first PASSIVE (copies what it can,
// blocks nobody), then TRUNCATE, which copies the rest and empties the
// file but holds new writers off while it waits for readers, so it waits
// at most walTruncateWait and tries again at the next check rather than
// make a writer outwait its own busy timeout. journal_size_limit also
// trims the file after SQLite's own checkpoints.
var (
	walLimit        int64 = 64 << 20
	walCheckEvery         = time.Second
	walTruncateWait       = 200 * time.Millisecond
)

// idleConnLife is how long an unused connection stays open. Each one holds
// its own page cache (up to 8 MiB, cache_size below), which SQLite frees
// only when the connection closes: four searches at once over a 19 MB
// file left 45 MB of cache in two idle connections, and in the scale
// benchmark the manager's RSS rose 63 MiB with its live heap 2.7 MiB.
var idleConnLife = time.Minute

// maxOpenConns bounds the connections, and with them the page caches, the
// store holds at once: database/sql otherwise opens one per concurrent
// query, so a burst of searches from the public search endpoint could
// hold one page cache per search in flight.
// Four leaves room for the writer, the checkpointer and two readers at
// once; a search beyond them waits in the pool for its turn, bounded by
// its request's deadline (the search API's 10 s, then a 503), which on the
// few cores a manager gets costs little: SQLite's reads are CPU work in
// this process. The bound is 4 × 8 MiB. No operation of the store asks
// for a second connection while it holds one (a write runs in its one
// transaction, a search closes each result set before the next query), so
// the cap cannot deadlock.
const maxOpenConns = 4

// cacheKiB is each connection's page cache (cache_size), in KiB. 8 MiB
// writes as fast as 32 MiB: filling the search benchmark's corpus (5,000
// sites, 100,000 pages, a 358 MB file) took 289 s with 8 MiB, 285 s with
// 16 and 318 s with 32 (one run each, same machine): what a bigger cache
// would hold is in the kernel's page cache anyway. And every MiB here is
// a MiB the manager's Go heap gives up (operator's GoMemLimit).
const cacheKiB = 8 << 10

// MaxPageCacheBytes bounds the page caches the store holds at once: memory
// SQLite allocates outside the Go heap (modernc.org/libc), which the
// manager keeps out of the Go runtime's memory limit.
const MaxPageCacheBytes = maxOpenConns * cacheKiB << 10

// busyTimeout is how long a statement waits for another connection's lock.
var busyTimeout = 10 * time.Second

// Open opens (creating if needed) the database file at path and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: empty database path")
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walLimit))
	// 8 MiB of page cache per connection rather than 2: writing a site
	// touches the postings index in many places, and a small cache spills
	// to the file in the middle of the transaction.
	q.Add("_pragma", fmt.Sprintf("cache_size(-%d)", cacheKiB))
	// Writers take the lock when they begin, not when they first write, so
	// two writers never deadlock upgrading read locks.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	db.SetConnMaxIdleTime(idleConnLife)
	db.SetMaxOpenConns(maxOpenConns)
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	bg, stop := context.WithCancel(context.Background())
	st := &Store{Store: sqlstore.New(db, dialect{}), stop: stop, done: make(chan struct{})}
	st.OneWriterAtATime()
	go st.checkpoint(bg, path+"-wal")
	return st, nil
}

// truncateWAL checkpoints the write-ahead log on a connection of its own,
// whose busy timeout is walTruncateWait for the TRUNCATE step. A busy
// result (a reader or writer outlasted the wait) is not an error: the log
// was copied as far as it could be, and the next check tries again.
func (s *Store) truncateWAL(ctx context.Context) error {
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		return err
	}
	// The connection goes back to the pool with the usual busy timeout,
	// or is discarded when that cannot be restored.
	defer conn.Close()
	var busy, logPages, copied int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &copied); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", walTruncateWait.Milliseconds())); err != nil {
		return err
	}
	truncErr := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &copied)
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeout.Milliseconds())); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		return err
	}
	return truncErr
}

// checkpoint empties the write-ahead log whenever it has grown past
// walLimit, until ctx ends.
func (s *Store) checkpoint(ctx context.Context, wal string) {
	defer close(s.done)
	tick := time.NewTicker(walCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if fi, err := os.Stat(wal); err != nil || fi.Size() <= walLimit {
			continue
		}
		if err := s.truncateWAL(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("sqlite: checkpointing the write-ahead log failed", "err", err)
		}
	}
}

func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if version == len(migrations) {
		// Up to date: writing the same version again would still write a
		// page, and a start must leave the file as it found it.
		return nil
	}
	if err := sqlstore.Migrate(ctx, tx, version, migrations, nil); err != nil {
		return err
	}
	if version < postingsVersion {
		if err := sqlstore.Reindex(ctx, tx, dialect{}); err != nil {
			return err
		}
	}
	// PRAGMA takes no bound parameters; the value is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("record schema version: %w", err)
	}
	return tx.Commit()
}

type dialect struct{}

func (dialect) Rebind(q string) string { return q }

// LockWrites does nothing: every transaction begins IMMEDIATE, which
// already admits one writer at a time (and within this process writers
// queue before they begin: OneWriterAtATime, set by Open).
func (dialect) LockWrites(context.Context, *sql.Tx) error { return nil }
