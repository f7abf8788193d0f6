package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// TestFireScheduleLockedRow: a session holding a schedule's row (a process
// frozen or cut off in FireSchedule's transaction) delays the firing of
// that schedule by at most a second, with job.ErrConflict naming it, and
// none of the others; once the row is free the tick fires.
func TestFireScheduleLockedRow(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		sc := &job.Schedule{Name: name, Spec: "@every 1m", Kind: "tick", NextRunAt: t0, CreatedAt: t0, Options: job.Options{Queue: job.DefaultQueue, MaxAttempts: 3}}
		if err := s.AddSchedule(ctx, store.AddScheduleParams{Schedule: sc}); err != nil {
			t.Fatal(err)
		}
	}
	fire := func(name string) (store.FireResult, error) {
		sc, err := s.GetSchedule(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		j := sc.NewJob(t0)
		if err := j.Validate(t0); err != nil {
			t.Fatal(err)
		}
		return s.FireSchedule(ctx, store.FireScheduleParams{Now: t0, Name: name, FireTime: t0, Next: t0.Add(time.Minute), Job: j})
	}

	side := conn(t)
	tx, err := side.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{s.Schema(), "schedules"}.Sanitize()+` WHERE name = 'a' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	if r, err := fire("a"); !errors.Is(err, job.ErrConflict) || r.Fired {
		t.Fatalf("FireSchedule of a locked schedule: got %+v, %v, want job.ErrConflict", r, err)
	}
	if r, err := fire("b"); err != nil || !r.Fired {
		t.Fatalf("FireSchedule of another schedule meanwhile: got %+v, %v, want fired", r, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := fire("a"); err != nil || !r.Fired {
		t.Fatalf("FireSchedule once the row is free: got %+v, %v, want fired", r, err)
	}
}
