package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/lohisoft/crawl-operator/index/store"
)

// postingsPerInsert bounds the rows of one INSERT: three parameters each,
// well under both engines' limits, while a page of ordinary length goes
// in one statement.
const postingsPerInsert = 300

// execer is a transaction or a database.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *Store) insertPage(ctx context.Context, tx *sql.Tx, st string, p store.Page) error {
	var id int64
	args := rowOf(st, p).Args()
	if err := tx.QueryRowContext(ctx, s.q("INSERT INTO pages ("+PageColumns+") VALUES (?"+strings.Repeat(", ?", len(args)-1)+") RETURNING id"),
		args...).Scan(&id); err != nil {
		return err
	}
	return writePostings(ctx, tx, s.d, id, p)
}

func (s *Store) updateExternalAnchors(ctx context.Context, tx *sql.Tx, id int64, p store.Page) error {
	if _, err := tx.ExecContext(ctx, s.q("UPDATE pages SET ext_anchors = ? WHERE id = ?"), jsonList(p.ExternalAnchors), id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM postings WHERE page_id = ?"), id); err != nil {
		return err
	}
	return writePostings(ctx, tx, s.d, id, p)
}

func (s *Store) deletePages(ctx context.Context, tx *sql.Tx, st string) (int64, error) {
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM postings WHERE page_id IN (SELECT id FROM pages WHERE site = ?)"), st); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, s.q("DELETE FROM pages WHERE site = ?"), st)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// writePostings inserts the index entries of page id, in token order so a
// page is written the same way every time.
func writePostings(ctx context.Context, ex execer, d Dialect, id int64, p store.Page) error {
	post := store.Postings(p)
	tokens := make([]string, 0, len(post))
	for t := range post {
		tokens = append(tokens, t)
	}
	slices.Sort(tokens)
	for chunk := range slices.Chunk(tokens, postingsPerInsert) {
		args := make([]any, 0, 3*len(chunk))
		for _, t := range chunk {
			args = append(args, t, id, post[t])
		}
		q := "INSERT INTO postings (term, page_id, score) VALUES " + strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", len(chunk)), ", ")
		if _, err := ex.ExecContext(ctx, d.Rebind(q), args...); err != nil {
			return fmt.Errorf("write postings: %w", err)
		}
	}
	return nil
}

// Reindex rebuilds the postings of every page in tx. Backends run it
// after the migration that introduced postings, whose SQL cannot compute
// them, and after any change to how store.Postings scores. Pages are read
// in batches, so memory stays bounded however large the index.
func Reindex(ctx context.Context, tx *sql.Tx, d Dialect) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM postings"); err != nil {
		return fmt.Errorf("reindex: %w", err)
	}
	for last := int64(0); ; {
		ids, pages, err := pageBatch(ctx, tx, d, last)
		if err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		for i, id := range ids {
			if err := writePostings(ctx, tx, d, id, pages[i]); err != nil {
				return fmt.Errorf("reindex page %s: %w", pages[i].URL, err)
			}
		}
		last = ids[len(ids)-1]
	}
}

// reindexBatch is how many pages Reindex holds at once.
const reindexBatch = 1000

func pageBatch(ctx context.Context, tx *sql.Tx, d Dialect, after int64) ([]int64, []store.Page, error) {
	rows, err := tx.QueryContext(ctx, d.Rebind(fmt.Sprintf("SELECT id, %s FROM pages WHERE id > ? ORDER BY id LIMIT %d", PageColumns, reindexBatch)), after)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ids []int64
	var pages []store.Page
	for rows.Next() {
		var id int64
		var r Row
		if err := rows.Scan(append([]any{&id}, r.dest()...)...); err != nil {
			return nil, nil, err
		}
		p, err := r.page()
		if err != nil {
			return nil, nil, err
		}
		ids, pages = append(ids, id), append(pages, p)
	}
	return ids, pages, rows.Err()
}
