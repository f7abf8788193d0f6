package engine

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// TestPaceHoldsEnqueuesWhileWorkersStarve: while the pool is behind (its
// last claim filled every free worker) and a worker waits for a job, Pace
// holds an enqueue until the pool has started a job for each call let
// through since, or paceMax has passed; it lets enqueues through at once
// while every worker is busy, once the pool has caught up, and when the
// pool is not running.
func TestPaceHoldsEnqueuesWhileWorkersStarve(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		e := New(Config{Store: memstore.New(), Workers: 2, Kinds: []string{"k"}, LeaseDuration: time.Minute,
			Now: time.Now, Logger: slog.New(slog.DiscardHandler),
			Resolve: func(*job.Job) (Handler, Settings, error) { return nil, Settings{}, nil }})
		// paced runs Pace(ctx) and reports how long it held the call.
		paced := func() <-chan time.Duration {
			ch := make(chan time.Duration, 1)
			go func() {
				t0 := time.Now()
				e.Pace(ctx)
				ch <- time.Since(t0)
			}()
			return ch
		}
		held := func(ch <-chan time.Duration) bool {
			synctest.Wait()
			select {
			case <-ch:
				return false
			default:
				return true
			}
		}
		if d := <-paced(); d != 0 {
			t.Fatalf("no pool running: held %s", d)
		}
		p := &pool{h: newHandoff(2), stopClaims: make(chan struct{})}
		e.running.Store(p)
		p.paced(true, 0)
		if d := <-paced(); d != 0 {
			t.Fatalf("behind, every worker busy: held %s", d)
		}
		go p.h.next(finished{}, false) // a worker waits for a job
		synctest.Wait()

		ch := paced()
		if !held(ch) {
			t.Fatal("behind, a worker waiting: not held")
		}
		p.paced(true, 1) // a claim started one job: one enqueue may go
		if d := <-ch; d != 0 {
			t.Fatalf("held %s after the claim, want 0 (no time passes)", d)
		}
		if d := <-paced(); d != paceMax {
			t.Fatalf("no claim: held %s, want paceMax %s", d, paceMax)
		}
		ch = paced()
		if !held(ch) {
			t.Fatal("behind, a worker waiting: not held")
		}
		p.paced(false, 0) // the pool caught up
		if d := <-ch; d != 0 {
			t.Fatalf("held %s after the pool caught up", d)
		}
		if d := <-paced(); d != 0 {
			t.Fatalf("caught up: held %s", d)
		}
		p.h.push([]*job.Job{{}}) // the waiting worker returns
	})
}
