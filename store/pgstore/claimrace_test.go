package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// TestClaimTakesEveryJobCommittedBefore: 8 goroutines enqueue one job per
// call (the group writer merges them) while one loop claims up to 100 at
// a time. A claim that began after an Enqueue returned, and took fewer
// than its limit, must have taken that job, or an earlier claim did: a job
// left behind waits below the claims' floors until their next refresh
// (issue 19; TestFloorsKeepAnnounced has the race step by step).
func TestClaimTakesEveryJobCommittedBefore(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{PoolSize: 6, PollInterval: time.Hour})
	ctx := t.Context()
	const producers, perProducer = 8, 200
	var (
		mu       sync.Mutex
		returned int64                    // Enqueue calls returned
		order    = make(map[job.ID]int64) // job → returned when
		claimed  = make(map[job.ID]bool)
		left     atomic.Int32
	)
	left.Store(producers)
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			defer left.Add(-1)
			for range perProducer {
				now := s.Now()
				j := &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3}
				if err := j.Validate(now); err != nil {
					t.Error(err)
					return
				}
				res, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: now, Jobs: []*job.Job{j}})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				returned++
				order[res[0].ID] = returned
				mu.Unlock()
			}
		})
	}
	const limit = 100
	for claims := 0; ; claims++ {
		done := left.Load() == 0
		mu.Lock()
		before := returned
		mu.Unlock()
		now := s.Now()
		res, err := s.Claim(ctx, store.ClaimParams{Now: now, Limit: limit, Worker: "w", LeaseUntil: now.Add(time.Hour), Kinds: []string{"k"}})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		for _, j := range res.Jobs {
			claimed[j.ID] = true
		}
		if len(res.Jobs) < limit {
			for id, at := range order {
				if at <= before && !claimed[id] {
					t.Errorf("claim %d took %d jobs of %d and left job %d, whose Enqueue returned before it began", claims, len(res.Jobs), limit, id)
					claimed[id] = true // once
				}
			}
		}
		mu.Unlock()
		if done && len(res.Jobs) < limit {
			break
		}
	}
	wg.Wait()
	if len(claimed) != producers*perProducer {
		t.Errorf("claimed %d jobs, want %d", len(claimed), producers*perProducer)
	}
}
