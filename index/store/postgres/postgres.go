// Package postgres is the production search backend: PostgreSQL through
// github.com/jackc/pgx/v5, searched with sqlstore's postings.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver

	"github.com/lohisoft/crawl-operator/index/store/sqlstore"
)

// lockKey is the advisory lock that serialises migrations and writers of
// the index, across replicas and processes ("crawlidx" in ASCII).
const lockKey = 0x637261776c696478

// migrations are applied in order and recorded in index_schema_migrations.
// Append, never edit.
var migrations = []string{
	`CREATE TABLE sites (
		site       text PRIMARY KEY,
		host       text NOT NULL,
		source     text NOT NULL,
		crawled_at bigint
	);
	CREATE INDEX sites_host ON sites (host);
	CREATE INDEX sites_source ON sites (source);
	CREATE TABLE pages (
		id          bigserial PRIMARY KEY,
		site        text NOT NULL,
		url         text NOT NULL UNIQUE,
		status_code integer NOT NULL,
		title       text NOT NULL,
		description text NOT NULL,
		h1          text NOT NULL,
		h2          text NOT NULL,
		h3          text NOT NULL,
		anchors     text NOT NULL,
		ext_anchors text NOT NULL,
		fetched_at  bigint,
		search      tsvector NOT NULL
	);
	CREATE INDEX pages_site ON pages (site);
	-- Without fastupdate, writes go straight into the index: a search never
	-- scans a pending list of recent writes (writes are one small site at
	-- a time, searches are many).
	CREATE INDEX pages_search ON pages USING gin (search) WITH (fastupdate = off);
	CREATE TABLE links (
		source_site text NOT NULL,
		target_site text NOT NULL,
		target_url  text NOT NULL,
		ord         integer NOT NULL,
		anchor      text NOT NULL
	);
	CREATE INDEX links_source ON links (source_site);
	CREATE INDEX links_target_site ON links (target_site);
	CREATE INDEX links_target_url ON links (target_url);`,
	// The run the site's rows come from (store.SiteDoc.Run): a manager
	// start compares it with each SiteIndex instead of writing everything
	// again. Rows from before this migration have none; the syncer takes
	// those as held (their next crawl records its run).
	`ALTER TABLE sites ADD COLUMN run text NOT NULL DEFAULT '';`,
	// Page languages, and the shared postings index (sqlstore) in place of
	// the tsvector; Open fills it from the pages (sqlstore.Reindex). Terms
	// are only compared for equality, so the C collation, the cheapest.
	`ALTER TABLE pages ADD COLUMN lang text NOT NULL DEFAULT '';
	DROP INDEX pages_search;
	ALTER TABLE pages DROP COLUMN search;
	CREATE TABLE postings (
		term    text COLLATE "C" NOT NULL,
		page_id bigint NOT NULL,
		score   integer NOT NULL,
		PRIMARY KEY (page_id, term)
	);
	CREATE INDEX postings_term ON postings (term, score DESC, page_id);`,
	// Conditional recrawl: each page's validators as the site sent them
	// (store.Page.ETag, LastModified; '' for none), and the stats of the
	// crawl the site's rows come from.
	`ALTER TABLE pages ADD COLUMN etag text NOT NULL DEFAULT '';
	ALTER TABLE pages ADD COLUMN last_modified text NOT NULL DEFAULT '';
	ALTER TABLE sites ADD COLUMN bytes_received bigint NOT NULL DEFAULT 0;
	ALTER TABLE sites ADD COLUMN pages_unchanged bigint NOT NULL DEFAULT 0;`,
}

// postingsVersion is the first schema version with postings: a database
// migrated from before it is reindexed.
const postingsVersion = 3

// Open connects to the database of dsn (a postgres:// URL or key=value
// string as pgx accepts it) and brings its schema up to date. The tables go
// into the first schema of the connection's search_path.
func Open(ctx context.Context, dsn string) (*sqlstore.Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return sqlstore.New(db, dialect{}), nil
}

// migrate applies missing migrations under an advisory lock, so replicas
// starting together apply each exactly once; running it again is a no-op.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS index_schema_migrations (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	var version int
	if err := tx.QueryRowContext(ctx, selectVersion).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := sqlstore.Migrate(ctx, tx, version, migrations, func(v int) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO index_schema_migrations (version) VALUES ($1)", v)
		return err
	}); err != nil {
		return err
	}
	if version < postingsVersion {
		if err := sqlstore.Reindex(ctx, tx, dialect{}); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// selectVersion reads how many migrations a database has had.
const selectVersion = "SELECT COALESCE(MAX(version), 0) FROM index_schema_migrations"

// Version returns the schema version of the database behind s.
func Version(ctx context.Context, s *sqlstore.Store) (int, error) {
	var v int
	err := s.DB().QueryRowContext(ctx, selectVersion).Scan(&v)
	return v, err
}

type dialect struct{}

// Rebind numbers the ? placeholders; no query of sqlstore has a literal ?.
func (dialect) Rebind(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (dialect) LockWrites(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey))
	return err
}
