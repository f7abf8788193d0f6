package hopper_test

// Small helpers that the tests of clients share (pool_test.go,
// step_test.go, timeorder_test.go, status_test.go, delays_test.go).

import (
	"context"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// farFuture is a fixed instant far in the future (a Monday, 00:00 UTC). A job
// enqueued without a run time is due at the wall clock's now and so is due at
// farFuture too; jobs given run times around farFuture never depend on the real
// clock. The step API (ProcessNext, RunReady, FireSchedules) takes it as now.
var farFuture = time.Date(2100, time.January, 4, 0, 0, 0, 0, time.UTC)

// silentClient returns a client for cfg with a silent logger, stopped (at the
// latest) when the test ends.
func silentClient(t *testing.T, cfg hopper.Config) *hopper.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := hopper.NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	// A safety net for tests that fail before their own Stop: in a synctest
	// bubble, cleanups run inside the bubble, so no goroutine is left.
	// Stopping twice is allowed.
	t.Cleanup(func() { _ = c.StopNow() })
	return c
}

// stopGracefully stops c gracefully and reports an error.
func stopGracefully(t *testing.T, c *hopper.Client) {
	t.Helper()
	if err := c.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// waitDone waits for job id to finish.
func waitDone(t *testing.T, c *hopper.Client, id hopper.ID) *hopper.Job {
	t.Helper()
	j, err := c.Wait(context.Background(), id)
	if err != nil {
		t.Fatalf("Wait(%d): %v", id, err)
	}
	return j
}

// enqueueFunc enqueues a closure.
func enqueueFunc(t *testing.T, c *hopper.Client, fn hopper.Func, opts *hopper.EnqueueOptions) hopper.ID {
	t.Helper()
	res, err := c.EnqueueFunc(context.Background(), fn, opts)
	if err != nil {
		t.Fatalf("EnqueueFunc: %v", err)
	}
	return res.ID
}

// recorder records strings from concurrent handlers.
type recorder struct {
	mu    sync.Mutex
	items []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, s)
}

func (r *recorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

// recordAs returns a closure that records name and succeeds.
func recordAs(r *recorder, name string) hopper.Func {
	return func(context.Context) (any, error) {
		r.add(name)
		return name, nil
	}
}

// startClient starts c.
func startClient(t *testing.T, c *hopper.Client) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// deadJobIDs lists the IDs in the dead-letter queue.
func deadJobIDs(t *testing.T, c *hopper.Client) []hopper.ID {
	t.Helper()
	dead, err := c.DeadJobs(context.Background(), 0, 0)
	if err != nil {
		t.Fatalf("DeadJobs: %v", err)
	}
	var ids []hopper.ID
	for _, j := range dead {
		ids = append(ids, j.ID)
	}
	return ids
}

// crashMidJob claims the waiting job through the store as a worker that
// then dies, holding a lease of d: it simulates a crash mid-task.
func crashMidJob(t *testing.T, st *memstore.Store, d time.Duration) {
	t.Helper()
	now := time.Now()
	res, err := st.Claim(context.Background(), store.ClaimParams{Now: now, Limit: 1, Worker: "crashed", LeaseUntil: now.Add(d)})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Claim: got %d jobs, %v; want 1", len(res.Jobs), err)
	}
}

// sharedStoreURL returns the URL of a new durable store for a test of
// several clients sharing it: a new SQLite file (kind "sqlite") or a fresh
// PostgreSQL schema (kind "postgres"; the test skips without a server, or
// fails under CI), whose Stores pool 4 connections each in a test and the
// default number in a benchmark.
func sharedStoreURL(t testing.TB, kind string) string {
	t.Helper()
	if kind == "sqlite" {
		return "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	}
	if _, ok := t.(*testing.B); ok {
		return pgtest.StoreURL(t, 0) // the store's own pool, as in production
	}
	return pgtest.StoreURL(t, 4)
}

// openClients opens n clients of 8 workers on url, each with its own store
// (as n processes would), stopped when the test ends; not started.
func openClients(t *testing.T, url string, n int, ws *hopper.Workers) []*hopper.Client {
	t.Helper()
	var clients []*hopper.Client
	for range n {
		c, err := hopper.Open(context.Background(), url, hopper.Config{Workers: ws, Concurrency: 8, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.StopNow() })
		clients = append(clients, c)
	}
	return clients
}
