// Package sqlite is the embedded search backend: one SQLite file, searched
// with FTS5, through modernc.org/sqlite (pure Go, no cgo).
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/lohisoft/crawl-operator/index/store"
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
}

// Open opens (creating if needed) the database file at path and brings its
// schema up to date.
func Open(ctx context.Context, path string) (*sqlstore.Store, error) {
	if path == "" {
		return nil, fmt.Errorf("sqlite: empty database path")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Writers take the lock when they begin, not when they first write, so
	// two writers never deadlock upgrading read locks.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	return sqlstore.New(db, dialect{}), nil
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
	// PRAGMA takes no bound parameters; the value is our own integer.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations))); err != nil {
		return fmt.Errorf("record schema version: %w", err)
	}
	return tx.Commit()
}

type dialect struct{}

func (dialect) Rebind(q string) string { return q }

// LockWrites does nothing: every transaction begins IMMEDIATE, which
// already admits one writer at a time.
func (dialect) LockWrites(context.Context, *sql.Tx) error { return nil }

func (dialect) InsertPage(ctx context.Context, tx *sql.Tx, row sqlstore.Row, doc store.Document) error {
	var id int64
	if err := tx.QueryRowContext(ctx, "INSERT INTO pages ("+sqlstore.PageColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
		row.Args()...).Scan(&id); err != nil {
		return err
	}
	return writeDoc(ctx, tx, id, doc)
}

func (dialect) UpdateExternalAnchors(ctx context.Context, tx *sql.Tx, id int64, ext string, doc store.Document) error {
	if _, err := tx.ExecContext(ctx, "UPDATE pages SET ext_anchors = ? WHERE id = ?", ext, id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM pages_fts WHERE rowid = ?", id); err != nil {
		return err
	}
	return writeDoc(ctx, tx, id, doc)
}

func writeDoc(ctx context.Context, tx *sql.Tx, id int64, doc store.Document) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO pages_fts (rowid, title, headings, anchors, description) VALUES (?, ?, ?, ?, ?)",
		id, doc.Title, doc.Headings, doc.Anchors, doc.Description)
	return err
}

func (dialect) DeletePages(ctx context.Context, tx *sql.Tx, site string) (int64, error) {
	if _, err := tx.ExecContext(ctx, "DELETE FROM pages_fts WHERE rowid IN (SELECT id FROM pages WHERE site = ?)", site); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM pages WHERE site = ?", site)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// SearchQuery ranks with BM25, weighting the columns title, headings,
// anchors, description as 10, 4, 2, 1 (the rank configured in the
// migration). The best rows are picked inside FTS5 before the join, so a
// word on most pages does not join every page; ties are ordered by URL.
func (dialect) SearchQuery() string {
	return `SELECT p.url, p.title, p.description, p.site
		FROM (SELECT rowid, rank FROM pages_fts WHERE pages_fts MATCH ?1 ORDER BY rank LIMIT ?2) hit
		JOIN pages p ON p.id = hit.rowid
		ORDER BY hit.rank, p.url`
}

// MatchArg quotes every term, so it is a plain string to FTS5 whatever it
// contains; juxtaposed strings must all match.
func (dialect) MatchArg(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	return strings.Join(quoted, " ")
}
