package pgstore_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// TestReadOnlyWithoutSchema: a read-only Store of a database without
// Hopper's schema reads as empty and creates nothing.
func TestReadOnlyWithoutSchema(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	s := openIn(t, schema, pgstore.Options{ReadOnly: true})
	ctx := t.Context()
	if _, err := s.Get(ctx, 1); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("Get: got %v, want job.ErrNotFound", err)
	}
	if js, err := s.List(ctx, store.ListParams{}); err != nil || len(js) != 0 {
		t.Errorf("List: got %d jobs, %v", len(js), err)
	}
	if n, err := s.Count(ctx, store.ListParams{}); err != nil || n != 0 {
		t.Errorf("Count: got %d, %v", n, err)
	}
	if st, err := s.Stats(ctx, store.StatsParams{Now: t0, FinishedSince: t0}); err != nil || len(st.ByQueue) != 0 || len(st.Finished) != 0 {
		t.Errorf("Stats: got %+v, %v", st, err)
	}
	if _, err := s.GetSchedule(ctx, "x"); !errors.Is(err, job.ErrNotFound) {
		t.Errorf("GetSchedule: got %v, want job.ErrNotFound", err)
	}
	if ss, err := s.ListSchedules(ctx); err != nil || len(ss) != 0 {
		t.Errorf("ListSchedules: got %v, %v", ss, err)
	}
	if rels := relations(t, conn(t), schema); len(rels) != 0 {
		t.Errorf("read-only Open created %v", rels)
	}
}

// TestMustExist: with MustExist, a schema that does not exist is
// ErrNoSchema, read-only or not, and is not created; once it exists, both
// open.
func TestMustExist(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	ctx := t.Context()
	for _, ro := range []bool{true, false} {
		s, err := pgstore.Open(ctx, testURL(t), pgstore.Options{Schema: schema, PoolSize: 2, ReadOnly: ro, MustExist: true})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, store.ErrNoSchema) || !strings.Contains(err.Error(), schema) {
			t.Errorf("Open (read-only %v) of a schema that does not exist: got %v, want ErrNoSchema naming it", ro, err)
		}
	}
	if rels := relations(t, conn(t), schema); len(rels) != 0 {
		t.Errorf("Open with MustExist created %v", rels)
	}
	openIn(t, schema, pgstore.Options{}) // creates it
	openIn(t, schema, pgstore.Options{MustExist: true})
	openIn(t, schema, pgstore.Options{MustExist: true, ReadOnly: true})
}

// TestReadOnlyRefusesWrites: every write of a read-only Store fails with
// ErrReadOnly, saying why, and the server refuses writes on its
// connections too; reads see the jobs.
func TestReadOnlyRefusesWrites(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	rw := openIn(t, schema, pgstore.Options{})
	id := enqueue(t, rw, newJob(t, "k"))[0]
	s := openIn(t, schema, pgstore.Options{ReadOnly: true})
	ctx := t.Context()
	if j, err := s.Get(ctx, id); err != nil || j.Kind != "k" {
		t.Errorf("Get: got %v, %v", j, err)
	}
	j := newJob(t, "k")
	writes := map[string]error{}
	_, writes["Enqueue"] = s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	_, writes["Claim"] = s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
	_, writes["Finish"] = s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: []store.Outcome{{ID: id, Attempt: 1, Claim: 1, State: job.StateCompleted}}})
	_, writes["Heartbeat"] = s.Heartbeat(ctx, store.HeartbeatParams{Now: t0, Worker: "w", Jobs: []store.Lease{{ID: id, Claim: 1}}})
	_, writes["Rescue"] = s.Rescue(ctx, store.RescueParams{Now: t0})
	_, writes["Cancel"] = s.Cancel(ctx, store.CancelParams{Now: t0, ID: id})
	_, writes["Reschedule"] = s.Reschedule(ctx, store.RescheduleParams{Now: t0, ID: id, RunAt: t0.Add(time.Hour)})
	_, writes["RetryDead"] = s.RetryDead(ctx, store.RetryDeadParams{Now: t0, All: true})
	_, writes["Purge"] = s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, All: true})
	writes["AddSchedule"] = s.AddSchedule(ctx, store.AddScheduleParams{Schedule: &job.Schedule{Name: "s", Spec: "@every 1m", Kind: "k"}})
	_, writes["UpdateSchedule"] = s.UpdateSchedule(ctx, store.UpdateScheduleParams{Name: "s"})
	writes["RemoveSchedule"] = s.RemoveSchedule(ctx, "s")
	_, writes["FireSchedule"] = s.FireSchedule(ctx, store.FireScheduleParams{Now: t0, Name: "s", FireTime: t0, Job: j})
	_, writes["Lead"] = s.Lead(ctx, store.LeadParams{Now: t0, Name: "m", Holder: "w", TTL: time.Second})
	writes["Resign"] = s.Resign(ctx, store.LeadParams{Now: t0, Name: "m", Holder: "w"})
	_, writes["EnqueueTx"] = s.EnqueueTx(ctx, nil, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
	for name, err := range writes {
		if !errors.Is(err, pgstore.ErrReadOnly) || !strings.Contains(err.Error(), "ReadOnly") {
			t.Errorf("%s on a read-only store: got %v, want ErrReadOnly naming Options.ReadOnly", name, err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `DELETE FROM `+s.Schema()+`.jobs`); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a write through the read-only store's pool: got %v, want the server to refuse it", err)
	}
	if s.Listening() {
		t.Error("a read-only store listens")
	}
	if n, err := rw.Count(ctx, store.ListParams{}); err != nil || n != 1 {
		t.Errorf("after the refused writes: %d jobs, %v, want 1", n, err)
	}
}
