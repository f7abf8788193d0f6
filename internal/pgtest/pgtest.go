// Package pgtest gives tests outside store/pgstore a PostgreSQL schema of
// their own on the server CI starts: the one rule for finding it, skipping
// without it and cleaning up after.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The environment variables naming the test server and a PgBouncer in
// transaction mode in front of it (.ci/run sets both).
const (
	EnvURL     = "HOPPER_TEST_POSTGRES"
	EnvBouncer = "HOPPER_TEST_PGBOUNCER"
)

const example = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the URL of the test server. Without one the test is
// skipped with one line naming the variable, or fails when CI is set.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI needs it for the PostgreSQL tests (e.g. %s)", EnvURL, example)
		}
		t.Skipf("set %s (e.g. %s) to run the PostgreSQL tests", EnvURL, example)
	}
	return u
}

// Schema returns the name of a schema no other test uses, dropped with
// everything in it when the test ends.
func Schema(t testing.TB) string {
	t.Helper()
	u := ServerURL(t)
	var b [6]byte
	rand.Read(b[:])
	name := "hopper_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// StoreURL returns a store URL (for store.Open, hopper.Open or the CLI's
// --db) on a fresh schema of the test server, with a pool of poolSize
// connections (0: the store's default): tests run in parallel, and the
// server's max_connections is shared.
func StoreURL(t testing.TB, poolSize int) string {
	t.Helper()
	base := ServerURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("hopper_schema", Schema(t))
	if poolSize > 0 {
		q.Set("hopper_pool_size", strconv.Itoa(poolSize))
	}
	u.RawQuery = q.Encode()
	return u.String()
}
