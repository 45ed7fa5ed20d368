// Package sqlstore implements store.Store over database/sql. The SQLite and
// PostgreSQL backends share its tables and its logic (replacing a site,
// cross-site anchors, purges, the postings index and search) and differ
// only in a Dialect: placeholders and how writers are serialised.
package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lohisoft/crawl-operator/index/store"
	"github.com/lohisoft/crawl-operator/internal/site"
)

// Tables every dialect creates, with these columns at least:
//
//	sites(site PK, host, source, crawled_at, run, bytes_received,
//	      pages_unchanged)
//	pages(id PK, site, url UNIQUE, status_code, title, description,
//	      h1, h2, h3, anchors, ext_anchors, fetched_at, lang, etag,
//	      last_modified)
//	links(source_site, target_site, target_url, ord, anchor)
//	postings(term, page_id, score) PK (page_id, term),
//	      index (term, score DESC, page_id)
//
// Lists are JSON arrays in text columns; times are Unix milliseconds, NULL
// when unknown. postings is the search index (store.Postings): the same
// rows in both engines, searched by the same code (search.go), so both
// answer every query alike.

// Dialect is what differs between database engines.
type Dialect interface {
	// Rebind turns a query written with ? placeholders into the engine's.
	Rebind(query string) string
	// LockWrites serialises writers for the rest of tx where the engine
	// does not already.
	LockWrites(ctx context.Context, tx *sql.Tx) error
}

// Row is a page as stored, in column order.
type Row struct {
	Site, URL                string
	StatusCode               int
	Title, Description       string
	H1, H2, H3, Anchors, Ext string // JSON arrays
	FetchedAt                sql.NullInt64
	Lang                     string
	ETag, LastModified       string
}

// Args returns the row's values in column order.
func (r Row) Args() []any {
	return []any{r.Site, r.URL, r.StatusCode, r.Title, r.Description, r.H1, r.H2, r.H3, r.Anchors, r.Ext, r.FetchedAt, r.Lang, r.ETag, r.LastModified}
}

// PageColumns names the columns of Row, in order.
const PageColumns = "site, url, status_code, title, description, h1, h2, h3, anchors, ext_anchors, fetched_at, lang, etag, last_modified"

// Store is a store.Store on one database.
type Store struct {
	db *sql.DB
	d  Dialect
	// firstBound overrides the constant when not 0 (SetFirstBound).
	firstBound atomic.Int64
	// writers, when not nil, admits one writing transaction of this
	// process at a time (OneWriterAtATime).
	writers chan struct{}
}

// OneWriterAtATime makes this process's writers queue in Go for the one
// writing transaction a SQLite file allows, instead of each polling the
// file lock through the busy timeout: with dozens of writers queued and a
// write of a site taking 150 ms, the last one outwaited its 10 s timeout
// and failed. Only writers of other processes still meet the busy timeout.
// Call it before the store is used.
func (s *Store) OneWriterAtATime() { s.writers = make(chan struct{}, 1) }

// New wraps an open, migrated database.
func New(db *sql.DB, d Dialect) *Store { return &Store{db: db, d: d} }

// DB returns the underlying database, for tests that inspect it.
func (s *Store) DB() *sql.DB { return s.db }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) q(query string) string { return s.d.Rebind(query) }

// write runs fn in one serialised transaction.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	if s.writers != nil {
		select {
		case s.writers <- struct{}{}:
			defer func() { <-s.writers }()
		case <-ctx.Done():
			return fmt.Errorf("%s: waiting for the writer before it: %w", what, ctx.Err())
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s: begin: %w", what, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if err := s.d.LockWrites(ctx, tx); err != nil {
		return fmt.Errorf("%s: lock: %w", what, err)
	}
	if err := fn(tx); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s: commit: %w", what, err)
	}
	return nil
}

// ReplaceSite implements store.Store.
func (s *Store) ReplaceSite(ctx context.Context, doc store.SiteDoc) error {
	doc = doc.Clean()
	if err := doc.Validate(); err != nil {
		return err
	}
	return s.write(ctx, "replace site "+doc.Site, func(tx *sql.Tx) error {
		doc, err := s.carry(ctx, tx, doc)
		if err != nil {
			return err
		}
		// Pages the site linked to before and links to now both need their
		// external anchors recomputed.
		affected, err := s.linkTargets(ctx, tx, doc.Site)
		if err != nil {
			return err
		}
		// A SiteIndex names one site; if its site changed, the old one goes.
		stale, err := s.strings(ctx, tx, "SELECT site FROM sites WHERE source = ? AND site <> ?", doc.Source, doc.Site)
		if err != nil {
			return err
		}
		for _, old := range stale {
			t, _, err := s.deleteSite(ctx, tx, old)
			if err != nil {
				return err
			}
			affected = append(affected, t...)
		}
		if _, _, err := s.deleteSite(ctx, tx, doc.Site); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.q("INSERT INTO sites (site, host, source, crawled_at, run, bytes_received, pages_unchanged) VALUES (?, ?, ?, ?, ?, ?, ?)"),
			doc.Site, store.Host(doc.Site), doc.Source, millis(doc.CrawledAt), doc.Run, max(doc.BytesReceived, 0), max(doc.PagesUnchanged, 0)); err != nil {
			return fmt.Errorf("insert site: %w", err)
		}
		for _, l := range doc.Links {
			target, _ := site.Parse(l.URL) // Validate parsed it already
			for i, a := range l.Anchors {
				if _, err := tx.ExecContext(ctx, s.q("INSERT INTO links (source_site, target_site, target_url, ord, anchor) VALUES (?, ?, ?, ?, ?)"),
					doc.Site, target.String(), l.URL, i, a); err != nil {
					return fmt.Errorf("insert link: %w", err)
				}
			}
			affected = append(affected, l.URL)
		}
		ext, err := s.anchorsInto(ctx, tx, doc.Site)
		if err != nil {
			return err
		}
		for _, p := range doc.Pages {
			p.ExternalAnchors = store.MergeAnchors(p.Anchors, ext[p.URL])
			if err := s.insertPage(ctx, tx, doc.Site, p); err != nil {
				return fmt.Errorf("insert page %s: %w", p.URL, err)
			}
		}
		return s.refresh(ctx, tx, affected)
	})
}

// carry completes a document with unchanged pages from the site's rows
// (store.Carry), read in the replacing transaction.
func (s *Store) carry(ctx context.Context, tx *sql.Tx, doc store.SiteDoc) (store.SiteDoc, error) {
	if !doc.HasUnchanged() {
		return doc, nil
	}
	pages, err := s.pagesWhere(ctx, tx, "site = ?", doc.Site)
	if err != nil {
		return doc, err
	}
	stored := make(map[string]store.Page, len(pages))
	for _, p := range pages {
		stored[p.URL] = p.Page
	}
	rows, err := tx.QueryContext(ctx, s.q("SELECT target_url, anchor FROM links WHERE source_site = ? ORDER BY target_url, ord"), doc.Site)
	if err != nil {
		return doc, fmt.Errorf("read links of %s: %w", doc.Site, err)
	}
	defer rows.Close()
	var links []store.Link
	for rows.Next() {
		var u, a string
		if err := rows.Scan(&u, &a); err != nil {
			return doc, fmt.Errorf("read links of %s: %w", doc.Site, err)
		}
		if n := len(links); n == 0 || links[n-1].URL != u {
			links = append(links, store.Link{URL: u})
		}
		links[len(links)-1].Anchors = append(links[len(links)-1].Anchors, a)
	}
	if err := rows.Err(); err != nil {
		return doc, err
	}
	return store.Carry(doc, stored, links), nil
}

// Validators implements store.Store.
func (s *Store) Validators(ctx context.Context, source, st string) ([]store.Validators, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT url, etag, last_modified FROM pages
		WHERE site = (SELECT site FROM sites WHERE source = ? AND site = ?) ORDER BY url`), source, st)
	if err != nil {
		return nil, fmt.Errorf("validators of %s: %w", st, err)
	}
	defer rows.Close()
	var out []store.Validators
	for rows.Next() {
		var v store.Validators
		if err := rows.Scan(&v.URL, &v.ETag, &v.LastModified); err != nil {
			return nil, fmt.Errorf("validators of %s: %w", st, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// DeleteSource implements store.Store.
func (s *Store) DeleteSource(ctx context.Context, source string, keep ...string) (int64, error) {
	var total int64
	err := s.write(ctx, "delete source "+source, func(tx *sql.Tx) error {
		sites, err := s.strings(ctx, tx, "SELECT site FROM sites WHERE source = ?", source)
		if err != nil {
			return err
		}
		sites = slices.DeleteFunc(sites, func(site string) bool { return slices.Contains(keep, site) })
		total, err = s.deleteSites(ctx, tx, sites)
		return err
	})
	return total, err
}

// PurgeDomain implements store.Store.
func (s *Store) PurgeDomain(ctx context.Context, domain string) (store.Removed, error) {
	removed := store.Removed{}
	err := s.write(ctx, "purge domain "+domain, func(tx *sql.Tx) error {
		clear(removed) // a retried transaction starts over
		// Matching happens here with site.InDomain rather than in SQL, so the
		// backend cannot disagree with the Exclusion reconciler on what a
		// subdomain is. The tables are per site, so this is a short list.
		hosts, err := s.strings(ctx, tx, "SELECT DISTINCT host FROM sites")
		if err != nil {
			return err
		}
		var affected []string
		for _, h := range hosts {
			if !site.InDomain(h, domain) {
				continue
			}
			sites, err := s.pairs(ctx, tx, "SELECT site, source FROM sites WHERE host = ?", h)
			if err != nil {
				return err
			}
			for _, st := range sites {
				t, n, err := s.deleteSite(ctx, tx, st[0])
				if err != nil {
					return err
				}
				removed[st[1]] += n
				affected = append(affected, t...)
			}
		}
		if err := s.refresh(ctx, tx, affected); err != nil {
			return err
		}
		// Link texts other sites wrote about the domain's pages go too: the
		// owner asked for the domain to be gone from the index.
		targets, err := s.strings(ctx, tx, "SELECT DISTINCT target_site FROM links")
		if err != nil {
			return err
		}
		for _, t := range targets {
			if site.InDomain(store.Host(t), domain) {
				if _, err := tx.ExecContext(ctx, s.q("DELETE FROM links WHERE target_site = ?"), t); err != nil {
					return fmt.Errorf("delete links into %s: %w", t, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return removed, nil
}

func (s *Store) deleteSites(ctx context.Context, tx *sql.Tx, sites []string) (int64, error) {
	var total int64
	var affected []string
	for _, st := range sites {
		t, n, err := s.deleteSite(ctx, tx, st)
		if err != nil {
			return 0, err
		}
		total += n
		affected = append(affected, t...)
	}
	return total, s.refresh(ctx, tx, affected)
}

// deleteSite removes a site's rows and returns the pages it linked to (whose
// external anchors the caller must refresh) and the number of its pages.
func (s *Store) deleteSite(ctx context.Context, tx *sql.Tx, st string) ([]string, int64, error) {
	targets, err := s.linkTargets(ctx, tx, st)
	if err != nil {
		return nil, 0, err
	}
	n, err := s.deletePages(ctx, tx, st)
	if err != nil {
		return nil, 0, fmt.Errorf("delete pages of %s: %w", st, err)
	}
	for _, q := range []string{"DELETE FROM links WHERE source_site = ?", "DELETE FROM sites WHERE site = ?"} {
		if _, err := tx.ExecContext(ctx, s.q(q), st); err != nil {
			return nil, 0, fmt.Errorf("delete %s: %w", st, err)
		}
	}
	return targets, n, nil
}

func (s *Store) linkTargets(ctx context.Context, tx *sql.Tx, st string) ([]string, error) {
	return s.strings(ctx, tx, "SELECT DISTINCT target_url FROM links WHERE source_site = ?", st)
}

// anchorsInto returns the link texts other sites have for pages of st, by
// target URL, in a stable order.
func (s *Store) anchorsInto(ctx context.Context, tx *sql.Tx, st string) (map[string][]string, error) {
	rows, err := tx.QueryContext(ctx, s.q(
		"SELECT target_url, anchor FROM links WHERE target_site = ? ORDER BY source_site, target_url, ord"), st)
	if err != nil {
		return nil, fmt.Errorf("read anchors into %s: %w", st, err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var u, a string
		if err := rows.Scan(&u, &a); err != nil {
			return nil, err
		}
		out[u] = append(out[u], a)
	}
	return out, rows.Err()
}

// refresh recomputes the external anchors of the indexed pages among urls.
func (s *Store) refresh(ctx context.Context, tx *sql.Tx, urls []string) error {
	slices.Sort(urls)
	for _, u := range slices.Compact(urls) {
		var id int64
		var r Row
		err := tx.QueryRowContext(ctx, s.q("SELECT id, "+PageColumns+" FROM pages WHERE url = ?"), u).Scan(
			append([]any{&id}, r.dest()...)...)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read page %s: %w", u, err)
		}
		p, err := r.page()
		if err != nil {
			return err
		}
		ext, err := s.strings(ctx, tx, "SELECT anchor FROM links WHERE target_url = ? ORDER BY source_site, ord", u)
		if err != nil {
			return err
		}
		p.ExternalAnchors = store.MergeAnchors(p.Anchors, ext)
		if err := s.updateExternalAnchors(ctx, tx, id, p); err != nil {
			return fmt.Errorf("update anchors of %s: %w", u, err)
		}
	}
	return nil
}

// Sources implements store.Store.
func (s *Store) Sources(ctx context.Context) ([]store.SourceRun, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT source, site, run FROM sites ORDER BY source, site")
	if err != nil {
		return nil, fmt.Errorf("list sources: %w", err)
	}
	defer rows.Close()
	var out []store.SourceRun
	for rows.Next() {
		var r store.SourceRun
		if err := rows.Scan(&r.Source, &r.Site, &r.Run); err != nil {
			return nil, fmt.Errorf("list sources: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Sites implements store.Store.
func (s *Store) Sites(ctx context.Context) ([]store.SiteInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT s.site, s.host, s.crawled_at, s.bytes_received, s.pages_unchanged, COUNT(p.id)
		FROM sites s LEFT JOIN pages p ON p.site = s.site
		GROUP BY s.site, s.host, s.crawled_at, s.bytes_received, s.pages_unchanged ORDER BY s.site`)
	if err != nil {
		return nil, fmt.Errorf("list sites: %w", err)
	}
	defer rows.Close()
	out := []store.SiteInfo{}
	for rows.Next() {
		var si store.SiteInfo
		var crawled sql.NullInt64
		if err := rows.Scan(&si.Site, &si.Host, &crawled, &si.BytesReceived, &si.PagesUnchanged, &si.Pages); err != nil {
			return nil, fmt.Errorf("list sites: %w", err)
		}
		si.CrawledAt = fromMillis(crawled)
		out = append(out, si)
	}
	return out, rows.Err()
}

// Pages implements store.Store.
func (s *Store) Pages(ctx context.Context, host string) ([]store.SitePage, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q("SELECT COUNT(*) FROM sites WHERE host = ?"), host).Scan(&n); err != nil {
		return nil, fmt.Errorf("pages of %s: %w", host, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("host %q: %w", host, store.ErrNotFound)
	}
	return s.pagesWhere(ctx, s.db, "site IN (SELECT site FROM sites WHERE host = ?)", host)
}

// pagesWhere reads the pages that match the condition, sorted by URL.
func (s *Store) pagesWhere(ctx context.Context, q queryer, cond string, args ...any) ([]store.SitePage, error) {
	rows, err := q.QueryContext(ctx, s.q("SELECT "+PageColumns+" FROM pages WHERE "+cond+" ORDER BY url"), args...)
	if err != nil {
		return nil, fmt.Errorf("read pages: %w", err)
	}
	defer rows.Close()
	out := []store.SitePage{}
	for rows.Next() {
		var r Row
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, fmt.Errorf("read pages: %w", err)
		}
		p, err := r.page()
		if err != nil {
			return nil, err
		}
		out = append(out, store.SitePage{Site: r.Site, Page: p})
	}
	return out, rows.Err()
}

// pairs reads two text columns.
func (s *Store) pairs(ctx context.Context, q queryer, query string, args ...any) ([][2]string, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var v [2]string
		if err := rows.Scan(&v[0], &v[1]); err != nil {
			return nil, fmt.Errorf("%s: %w", query, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) strings(ctx context.Context, q queryer, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", query, err)
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func rowOf(st string, p store.Page) Row {
	return Row{
		Site: st, URL: p.URL, StatusCode: p.StatusCode, Title: p.Title, Description: p.Description,
		H1: jsonList(p.H1), H2: jsonList(p.H2), H3: jsonList(p.H3),
		Anchors: jsonList(p.Anchors), Ext: jsonList(p.ExternalAnchors),
		FetchedAt: millis(p.FetchedAt), Lang: p.Lang, ETag: p.ETag, LastModified: p.LastModified,
	}
}

func (r *Row) dest() []any {
	return []any{&r.Site, &r.URL, &r.StatusCode, &r.Title, &r.Description, &r.H1, &r.H2, &r.H3, &r.Anchors, &r.Ext, &r.FetchedAt, &r.Lang, &r.ETag, &r.LastModified}
}

func (r Row) page() (store.Page, error) {
	p := store.Page{URL: r.URL, StatusCode: r.StatusCode, Title: r.Title, Description: r.Description, FetchedAt: fromMillis(r.FetchedAt), Lang: r.Lang,
		ETag: r.ETag, LastModified: r.LastModified}
	for _, l := range []struct {
		col string
		dst *[]string
	}{{r.H1, &p.H1}, {r.H2, &p.H2}, {r.H3, &p.H3}, {r.Anchors, &p.Anchors}, {r.Ext, &p.ExternalAnchors}} {
		if err := json.Unmarshal([]byte(l.col), l.dst); err != nil {
			return store.Page{}, fmt.Errorf("page %s: corrupt list column: %w", r.URL, err)
		}
		if len(*l.dst) == 0 {
			*l.dst = nil // one zero value for "none", whatever the column held
		}
	}
	return p, nil
}

func jsonList(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l) // a []string always marshals
	return string(b)
}

func millis(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

func fromMillis(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}
