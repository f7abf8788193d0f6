package sqlitestore

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// TestKeylessMergedEnqueue: a keyless job that the plain Enqueues of a
// batch insert together (runMerged) is claimed by a claim of the same
// transaction, after claims whose keyless reads found none.
func TestKeylessMergedEnqueue(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	one := 1
	if _, err := s.SetQueue(t.Context(), store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
		t.Fatal(err)
	}
	keyed := func(key string) *job.Job {
		j := testJob(t, "k")
		j.Queue, j.Key = "q", key
		return j
	}
	if _, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{keyed("hot"), keyed("hot")}}); err != nil {
		t.Fatal(err)
	}
	p := store.ClaimParams{Now: t0, Limit: 5, Worker: "w", LeaseUntil: t0.Add(time.Hour), Queues: []string{"q"}}
	for i, want := range []int{1, 0, 0} {
		if res, err := s.Claim(t.Context(), p); err != nil || len(res.Jobs) != want {
			t.Fatalf("claim %d: %d jobs, %v; want %d", i, len(res.Jobs), err, want)
		}
	}
	if n := s.w.keyless.reads.Load(); n != 1 {
		t.Fatalf("keyless reads: %d, want 1", n)
	}

	var reqs []*request
	for _, key := range []string{"hot", ""} {
		rows, err := makeRows([]*job.Job{keyed(key)})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := enqueueRequest(context.Background(), rows)
		reqs = append(reqs, r)
	}
	filter, _ := filterArgs(p.Queues, nil)
	var res store.ClaimResult
	reqs = append(reqs, &request{ctx: context.Background(), fn: func(w *writer) (err error) {
		res, err = s.claim(w, p, filter)
		return err
	}})
	commits := s.commits.Load()
	for _, err := range runBatch(s, reqs...) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := s.commits.Load() - commits; n != 1 {
		t.Fatalf("%d transactions, want 1", n)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].Key != "" {
		t.Errorf("claim after the merged enqueues: %d jobs, want the keyless one", len(res.Jobs))
	}
}
