package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// queueEnqueues holds s's group writer, starts one goroutine per job, each
// enqueueing its job alone, waits until all are queued, and lets the
// writer go. It returns each call's result and error.
func queueEnqueues(t *testing.T, s *pgstore.Store, jobs []*job.Job) ([][]store.EnqueueResult, []error) {
	t.Helper()
	queued := make(chan struct{}, len(jobs))
	release := pgstore.HoldWriter(s, func() { queued <- struct{}{} })
	res := make([][]store.EnqueueResult, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			res[i], errs[i] = s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
		})
	}
	for range jobs {
		<-queued
	}
	release()
	wg.Wait()
	return res, errs
}

// TestGroupCommitMergesConcurrentEnqueues: eight single-job Enqueues that
// arrive while the writer is busy go as one INSERT.
func TestGroupCommitMergesConcurrentEnqueues(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	jobs := make([]*job.Job, 8)
	for i := range jobs {
		jobs[i] = newJob(t, "k")
	}
	before := pgstore.InsertStatements(s)
	res, errs := queueEnqueues(t, s, jobs)
	if n := pgstore.InsertStatements(s) - before; n != 1 {
		t.Errorf("8 queued Enqueues: %d INSERT statements, want 1", n)
	}
	seen := map[job.ID]bool{}
	for i := range jobs {
		if errs[i] != nil || len(res[i]) != 1 || res[i][0].Duplicate || seen[res[i][0].ID] {
			t.Fatalf("Enqueue %d: got %v, %v", i, res[i], errs[i])
		}
		seen[res[i][0].ID] = true
		if g, err := s.Get(t.Context(), res[i][0].ID); err != nil || g.State != job.StateAvailable {
			t.Errorf("Get(%d): %+v, %v", res[i][0].ID, g, err)
		}
	}
}

// TestGroupCommitIsolatesFailures: a caller whose job fails the merged
// statement fails alone; the others' jobs are inserted; a caller that gave
// up while queued is answered with its context's error and inserts
// nothing.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	good1, bad, good2, gone := newJob(t, "good"), newJob(t, "bad"), newJob(t, "good"), newJob(t, "gone")
	bad.Args = json.RawMessage(`{"not json`) // past Validate: only the server can refuse it
	// The last caller's context is cancelled while its request is queued.
	live, stop := context.WithCancel(context.Background())
	ctxs := []context.Context{context.Background(), context.Background(), context.Background(), live}
	queued := make(chan struct{}, 4)
	release := pgstore.HoldWriter(s, func() { queued <- struct{}{} })
	jobs := []*job.Job{good1, bad, good2, gone}
	res := make([][]store.EnqueueResult, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() { res[i], errs[i] = s.Enqueue(ctxs[i], store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}}) })
	}
	for range jobs {
		<-queued
	}
	stop()
	release()
	wg.Wait()
	if errs[1] == nil {
		t.Errorf("Enqueue of invalid JSON args: no error")
	}
	if !errors.Is(errs[3], context.Canceled) {
		t.Errorf("Enqueue whose caller gave up: got %v, want context.Canceled", errs[3])
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil || len(res[i]) != 1 {
			t.Errorf("Enqueue %d next to a failing one: %v, %v", i, res[i], errs[i])
		}
	}
	if js, err := s.List(t.Context(), store.ListParams{}); err != nil || len(js) != 2 || js[0].Kind != "good" || js[1].Kind != "good" {
		t.Errorf("stored jobs: %v, %v, want the two good ones", js, err)
	}
}

// TestGroupCommitFreeRunning: eight goroutines enqueueing one job at a
// time, as fast as they can, share statements.
func TestGroupCommitFreeRunning(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{PoolSize: 2})
	const per = 100
	before := pgstore.InsertStatements(s)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range per {
				if _, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{newJob(t, "k")}}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	stmts := pgstore.InsertStatements(s) - before
	t.Logf("8 goroutines × %d single enqueues: %d INSERT statements, %.1f jobs per statement", per, stmts, float64(8*per)/float64(stmts))
	if stmts >= 8*per {
		t.Errorf("%d statements for %d jobs: no two enqueues shared one", stmts, 8*per)
	}
	if n, err := s.Count(t.Context(), store.ListParams{}); err != nil || n != 8*per {
		t.Errorf("Count: %d, %v, want %d", n, err, 8*per)
	}
}
