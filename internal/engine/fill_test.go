package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// TestFillClaimsOnlyForFreeWorkers: the dispatcher and the completer both
// fill the pool (fill); between them they never claim more jobs than there
// are free workers, however they interleave, and once the pool stops
// claiming, or its handoff is closed, fill claims nothing.
func TestFillClaimsOnlyForFreeWorkers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	st := memstore.New()
	const workers, rounds = 3, 200
	enqueueK(t, st, now, 2*workers*rounds+10, 1)
	e := New(Config{Store: st, Workers: workers, Kinds: []string{"k"}, LeaseDuration: time.Minute,
		Now: func() time.Time { return now }, Logger: slog.New(slog.DiscardHandler),
		Resolve: func(*job.Job) (Handler, Settings, error) { return nil, Settings{}, nil }})
	p := &pool{h: newHandoff(workers), freed: make(chan struct{}, 1), stopClaims: make(chan struct{})}
	take := func() { p.h.next(finished{}, false) }

	// Two fillers at once on an idle pool, round after round.
	claimed := 0
	for round := range rounds {
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				var reuse []*job.Job
				if _, _, err := e.fill(context.Background(), p, &reuse); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n, a := p.h.pending(), p.active.Load(); n != workers || a != workers {
			t.Fatalf("round %d: %d jobs handed out, %d active; want %d of each", round, n, a, workers)
		}
		claimed += workers
		for range workers {
			take()
			p.active.Add(-1)
		}
	}
	running, err := st.Count(context.Background(), store.ListParams{States: []job.State{job.StateRunning}})
	if err != nil || running != claimed {
		t.Fatalf("%d jobs running in the store (%v), want %d", running, err, claimed)
	}
	for range workers {
		p.h.push([]*job.Job{nil})
		p.active.Add(1)
	}

	// A worker frees up: the next fill takes exactly one job.
	take()
	p.active.Add(-1)
	var reuse []*job.Job
	if full, _, err := e.fill(context.Background(), p, &reuse); err != nil || !full || p.h.pending() != workers {
		t.Fatalf("fill with one free worker: full %v, err %v, %d handed out", full, err, p.h.pending())
	}

	// Stopping: with free workers, fill claims nothing.
	for range workers {
		take()
		p.active.Add(-1)
	}
	close(p.stopClaims)
	if _, _, err := e.fill(context.Background(), p, &reuse); err != nil || p.h.pending() != 0 || p.active.Load() != 0 {
		t.Fatalf("fill after stopClaims: err %v, %d handed out", err, p.h.pending())
	}
	p.stopClaims = make(chan struct{})
	p.closed = true
	if _, _, err := e.fill(context.Background(), p, &reuse); err != nil || p.h.pending() != 0 {
		t.Fatalf("fill with the handoff closed: err %v, %d handed out", err, p.h.pending())
	}
}

// failingClaims is a store whose claims fail while fail is set.
type failingClaims struct {
	store.Store
	fail  atomic.Bool
	calls atomic.Int64
}

func (s *failingClaims) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	s.calls.Add(1)
	if s.fail.Load() {
		return store.ClaimResult{}, errors.New("store down")
	}
	return s.Store.Claim(ctx, p)
}

// TestClaimFailureRetry: after a failed claim the dispatcher tries again
// claimRetry later, not before, and the job then runs.
func TestClaimFailureRetry(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &failingClaims{Store: memstore.New()}
		st.fail.Store(true)
		enqueueK(t, st, time.Now(), 1, 1)
		ran := make(chan struct{}, 1)
		e := New(Config{Store: st, Workers: 2, Kinds: []string{"k"}, LeaseDuration: time.Minute,
			Now: time.Now, Logger: slog.New(slog.DiscardHandler),
			Resolve: func(*job.Job) (Handler, Settings, error) {
				return func(context.Context, *job.Job) ([]byte, error) { ran <- struct{}{}; return nil, nil }, Settings{}, nil
			}})
		e.Start()
		defer e.Stop(context.Background())
		synctest.Wait()
		if n := st.calls.Load(); n != 1 || len(ran) != 0 {
			t.Fatalf("after a failed claim: %d claims, %d jobs run; want 1 and 0", n, len(ran))
		}
		st.fail.Store(false)
		time.Sleep(claimRetry - time.Millisecond)
		synctest.Wait()
		if n := st.calls.Load(); n != 1 {
			t.Fatalf("%d claims before claimRetry passed, want 1", n)
		}
		time.Sleep(time.Millisecond)
		<-ran
	})
}
