package pgstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// The PgBouncer the tests behind PgBouncer use (pgtest has the server's).
const exampleBURL = "postgres://postgres@127.0.0.1:6432/postgres?sslmode=disable"

// testURL returns the test server's URL. Without one the test is skipped,
// or fails when CI is set.
func testURL(t testing.TB) string {
	t.Helper()
	return pgtest.ServerURL(t)
}

// envOrSkip returns the environment variable name, skipping the test
// (failing it when CI is set) if it is empty.
func envOrSkip(t testing.TB, name, example, what string) string {
	t.Helper()
	u := os.Getenv(name)
	if u == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set: CI needs it for %s (e.g. %s)", name, what, example)
		}
		t.Skipf("set %s (e.g. %s) to run %s", name, example, what)
	}
	return u
}

// freshSchema returns the name of a schema no other test uses, and drops
// it (whatever a test created in it) when the test ends.
func freshSchema(t testing.TB) string {
	t.Helper()
	return pgtest.Schema(t)
}

// testPoolSize keeps the tests, which run in parallel, well within the
// server's max_connections.
const testPoolSize = 4

// openIn opens a Store on schema with opts (Schema and a small pool set if
// not), closed when the test ends.
func openIn(t testing.TB, schema string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	if opts.Schema == "" {
		opts.Schema = schema
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = testPoolSize
	}
	s, err := pgstore.Open(context.Background(), testURL(t), opts)
	if err != nil {
		t.Fatalf("Open(schema %s): %v", opts.Schema, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openStore opens a Store on a fresh schema.
func openStore(t testing.TB, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	return openIn(t, freshSchema(t), opts)
}

// conn returns a connection of its own to the test server, closed when
// the test ends.
func conn(t testing.TB) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), testURL(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newJob returns a job of kind, validated at t0.
func newJob(t testing.TB, kind string) *job.Job {
	t.Helper()
	j := &job.Job{Kind: kind, Queue: job.DefaultQueue, MaxAttempts: 3}
	if err := j.Validate(t0); err != nil {
		t.Fatal(err)
	}
	return j
}

// enqueue enqueues jobs at t0 in one call and returns their IDs.
func enqueue(t testing.TB, s store.Store, jobs ...*job.Job) []job.ID {
	t.Helper()
	res, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: jobs})
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	ids := make([]job.ID, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return ids
}
