package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// Migrate applies migrations[version:] in tx, version being how many of
// them the database has had already. Both backends keep an append-only
// list and refuse a database that has had more migrations than the list
// holds, so an older manager never writes into a schema it does not know.
// If record is not nil it stores the version reached after each migration,
// in tx; a backend that records the version once at the end passes nil.
func Migrate(ctx context.Context, tx *sql.Tx, version int, migrations []string, record func(version int) error) error {
	if version > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this manager knows (%d)", version, len(migrations))
	}
	for i := version; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if record == nil {
			continue
		}
		if err := record(i + 1); err != nil {
			return fmt.Errorf("record migration %d: %w", i+1, err)
		}
	}
	return nil
}
