// Package pgtest gives tests a PostgreSQL schema of their own on the test
// server, so parallel runs never see each other's tables.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// DefaultDSN is the test server: local, trust authentication.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// ServerDSN is the test server's DSN: $TEST_POSTGRES_DSN or DefaultDSN.
func ServerDSN() string {
	if v := os.Getenv("TEST_POSTGRES_DSN"); v != "" {
		return v
	}
	return DefaultDSN
}

// Required reports whether a missing server fails tests instead of
// skipping them: in CI, or when asked.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("REQUIRE_POSTGRES") == "1"
}

var (
	reachOnce sync.Once
	reachErr  error
)

// Schema creates a fresh schema on the test server, drops it with
// everything in it when t ends, and returns a DSN whose search_path is that
// schema. Without a server it fails the test when Required, and otherwise
// skips it saying so loudly.
//
// It holds the server for t (a shared lock, see ControlServer), so an
// outage test of another package waits until t is done.
func Schema(t testing.TB) string {
	t.Helper()
	holdShared(t)
	reachOnce.Do(func() { reachErr = ping(ServerDSN()) })
	if reachErr != nil {
		msg := fmt.Sprintf("PostgreSQL test server unreachable at %s: %v\n"+
			"\tstart it (see .ci/run) or point TEST_POSTGRES_DSN at one", ServerDSN(), reachErr)
		if Required() {
			t.Fatal(msg + "\n\tCI=true or REQUIRE_POSTGRES=1: the PostgreSQL backend must be tested")
		}
		t.Skip("!!! SKIPPING POSTGRESQL TESTS !!! " + msg)
	}
	admin, err := sql.Open("pgx", ServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	schema := "index_test_" + randomHex()
	ctx := context.Background()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		admin.Close()
		t.Fatalf("create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(ServerDSN())
	if err != nil {
		t.Fatalf("TEST_POSTGRES_DSN must be a postgres:// URL: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func ping(dsn string) error {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
