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
// through since, or paceMin has passed (claims with no time between
// them); it lets enqueues through at once while every worker is busy, once
// the pool has caught up, and when the pool is not running.
func TestPaceHoldsEnqueuesWhileWorkersStarve(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e, paced := paceEngine()
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
		if d := <-paced(); d != paceMin {
			t.Fatalf("no claim: held %s, want paceMin %s", d, paceMin)
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

// TestPaceHoldsForThePoolsClaimInterval: when the pool's claims come
// further apart than paceMin, Pace holds a call until a claim pays for it,
// not paceMin: a fixed 10 ms let a third of the held calls through on
// PostgreSQL flat out (claims 20–30 ms apart), and the backlog grew by
// them (issue 19). It waits for the next claim paceCycles of the claim
// interval (a moving average of the gaps while behind), again after each
// claim that started no job for it, and paceMax at most in all.
func TestPaceHoldsForThePoolsClaimInterval(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e, paced := paceEngine()
		p := &pool{h: newHandoff(2), stopClaims: make(chan struct{})}
		e.running.Store(p)
		go p.h.next(finished{}, false) // a worker waits for a job
		synctest.Wait()
		defer p.h.push([]*job.Job{{}}) // the waiting worker returns
		heldAfter := func(ch <-chan time.Duration, d time.Duration) {
			t.Helper()
			time.Sleep(d)
			synctest.Wait()
			select {
			case got := <-ch:
				t.Fatalf("let through after %s, want held past %s", got, d)
			default:
			}
		}

		// Claims 30 ms apart, each filling the free workers.
		p.paced(true, 0)
		time.Sleep(30 * time.Millisecond)
		p.paced(true, 0)
		ch := paced()
		heldAfter(ch, 25*time.Millisecond) // past paceMin
		p.paced(true, 1)                   // a claim starts a job: the call goes
		if d := <-ch; d != 25*time.Millisecond {
			t.Fatalf("held %s, want 25ms (until the claim)", d)
		}
		// Interval 30 + (25-30)/4 = 28.75 ms: the call waits 115 ms for a
		// claim; one that starts nothing for it after 50 ms (interval
		// 28.75 + (50-28.75)/4 = 34.0625 ms) starts a wait of 136.25 ms.
		ch = paced()
		heldAfter(ch, 50*time.Millisecond)
		p.paced(true, 0)
		if d := <-ch; d != 186250*time.Microsecond {
			t.Fatalf("held %s, want 186.25ms", d)
		}
		// A pause in which the pool was not behind is no interval.
		p.paced(false, 0)
		time.Sleep(time.Minute)
		p.paced(true, 0)
		p.paced(true, 0) // 0 ms: 34.0625 × 3/4
		if d := <-paced(); d != 102187500*time.Nanosecond {
			t.Fatalf("held %s, want 102.1875ms", d)
		}
		// Claims a minute apart: paceMax in all, claims or not.
		time.Sleep(time.Minute)
		p.paced(true, 0)
		if d := <-paced(); d != paceMax {
			t.Fatalf("held %s, want paceMax %s", d, paceMax)
		}
		ch = paced()
		heldAfter(ch, 600*time.Millisecond)
		p.paced(true, 0)
		if d := <-ch; d != paceMax {
			t.Fatalf("held %s, want paceMax %s", d, paceMax)
		}
	})
}

// paceEngine returns an engine of 2 workers on the memory store, and a
// function that runs its Pace in a goroutine and reports how long Pace held
// the call. Inside a synctest bubble.
func paceEngine() (*Engine, func() <-chan time.Duration) {
	e := New(Config{Store: memstore.New(), Workers: 2, Kinds: []string{"k"}, LeaseDuration: time.Minute,
		Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		Resolve: func(*job.Job) (Handler, Settings, error) { return nil, Settings{}, nil }})
	return e, func() <-chan time.Duration {
		ch := make(chan time.Duration, 1)
		go func() {
			t0 := time.Now()
			e.Pace(context.Background())
			ch <- time.Since(t0)
		}()
		return ch
	}
}
