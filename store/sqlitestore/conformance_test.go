package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
	"github.com/hopperq/hopper/store/storetest"
)

// TestConformance runs the store conformance suite, each case on a fresh
// file. After every call that may write jobs, and once the store is
// closed, lane_counts (which Stats, Count and Claim read) must be the jobs
// counted by (state, queue, kind): every transition the suite makes checks
// the counts the store keeps. And every keyed claim's visit of the keyless
// jobs that a keyless hint answers reads them anyway, and fails if it
// finds one (keyless.go).
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		path := filepath.Join(t.TempDir(), "hopper.db")
		s, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		sqlitestore.CheckKeyless(s)
		db, err := sql.Open("sqlite", "file:"+path+"?_query_only=1")
		if err != nil {
			t.Fatal(err)
		}
		c := &countChecked{Store: s, t: t, db: db}
		t.Cleanup(func() { // after the Close below
			c.check("Close")
			db.Close()
		})
		t.Cleanup(func() { s.Close() })
		return c
	})
}

// countChecked is a Store that checks lane_counts after each write.
type countChecked struct {
	*sqlitestore.Store
	t  *testing.T
	db *sql.DB
}

func (c *countChecked) check(after string) {
	c.t.Helper()
	d, err := sqlitestore.CountsDiff(context.Background(), c.db)
	if err != nil {
		c.t.Errorf("after %s: reading the counts: %v", after, err)
	} else if d != "" {
		c.t.Errorf("after %s, lane_counts differs from the jobs:\n%s", after, d)
	}
}

func (c *countChecked) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	defer c.check("Enqueue")
	return c.Store.Enqueue(ctx, p)
}

func (c *countChecked) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	defer c.check("Claim")
	return c.Store.Claim(ctx, p)
}

func (c *countChecked) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	defer c.check("Finish")
	return c.Store.Finish(ctx, p)
}

func (c *countChecked) Heartbeat(ctx context.Context, p store.HeartbeatParams) (store.HeartbeatResult, error) {
	defer c.check("Heartbeat")
	return c.Store.Heartbeat(ctx, p)
}

func (c *countChecked) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	defer c.check("Rescue")
	return c.Store.Rescue(ctx, p)
}

func (c *countChecked) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	defer c.check("Cancel")
	return c.Store.Cancel(ctx, p)
}

func (c *countChecked) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	defer c.check("Reschedule")
	return c.Store.Reschedule(ctx, p)
}

func (c *countChecked) RetryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	defer c.check("RetryDead")
	return c.Store.RetryDead(ctx, p)
}

func (c *countChecked) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	defer c.check("Purge")
	return c.Store.Purge(ctx, p)
}

func (c *countChecked) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	defer c.check("CancelMatching")
	return c.Store.CancelMatching(ctx, p)
}

func (c *countChecked) RetryMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	defer c.check("RetryMatching")
	return c.Store.RetryMatching(ctx, p)
}

func (c *countChecked) DeleteMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	defer c.check("DeleteMatching")
	return c.Store.DeleteMatching(ctx, p)
}

func (c *countChecked) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	defer c.check("FireSchedule")
	return c.Store.FireSchedule(ctx, p)
}

func (c *countChecked) Close() error {
	defer c.check("Close")
	return c.Store.Close()
}
