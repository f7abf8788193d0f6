package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// slowStore wraps the memory store so that each Claim, Finish and
// FinishClaim takes delay (fake time in a synctest bubble), as a durable
// store's round trip does, and counts the claims that came back empty
// while a queue's limit held jobs back.
type slowStore struct {
	*memstore.Store
	delay      time.Duration
	heldEmpty  atomic.Int64 // claims that took nothing, Held
	claims     atomic.Int64 // Claim and FinishClaim calls
	finishOnly atomic.Int64 // Finish calls
}

func (s *slowStore) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	time.Sleep(s.delay)
	res, err := s.Store.Claim(ctx, p)
	s.count(res)
	return res, err
}

func (s *slowStore) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	time.Sleep(s.delay)
	s.finishOnly.Add(1)
	return s.Store.Finish(ctx, p)
}

func (s *slowStore) FinishClaim(ctx context.Context, f store.FinishParams, c store.ClaimParams) ([]job.State, store.ClaimResult, error) {
	time.Sleep(s.delay)
	reached, res, err := s.Store.FinishClaim(ctx, f, c)
	s.count(res)
	return reached, res, err
}

func (s *slowStore) count(res store.ClaimResult) {
	s.claims.Add(1)
	if len(res.Jobs) == 0 && res.Held {
		s.heldEmpty.Add(1)
	}
}

// TestLimitEqualToWorkersDoesNotBind: a queue limited to as many jobs as
// the pool has workers, on a store whose calls take a round trip. The
// claim for the workers an outcome frees goes with that outcome's Finish
// (store.FinishClaimer), so it never finds the queue full of attempts
// already over: no claim comes back empty while jobs wait, and the jobs
// run a pool's worth per round trip (issue 21: a limit that does not bind
// costs nothing). Before, the claim ran beside the Finish, found the
// slots still taken and waited for the next wake-up: a claim in two was
// empty and the limit cost about half the rate.
func TestLimitEqualToWorkersDoesNotBind(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const workers, jobs = 4, 40
		now := time.Now()
		mem := memstore.New()
		defer mem.Close()
		n := workers
		if _, err := mem.SetQueue(context.Background(), store.SetQueueParams{Now: now, Name: job.DefaultQueue, Concurrency: &n}); err != nil {
			t.Fatal(err)
		}
		st := &slowStore{Store: mem, delay: time.Millisecond}
		enqueueK(t, st, now, jobs, 1)
		var ran, running, peak atomic.Int64
		e := New(Config{Store: st, Workers: workers, Kinds: []string{"k"}, LeaseDuration: time.Minute,
			Now: time.Now, Logger: slog.New(slog.DiscardHandler),
			Resolve: func(*job.Job) (Handler, Settings, error) {
				return func(context.Context, *job.Job) ([]byte, error) {
					if r := running.Add(1); r > peak.Load() {
						peak.Store(r)
					}
					running.Add(-1)
					ran.Add(1)
					return nil, nil
				}, Settings{}, nil
			}})
		began := time.Now()
		e.Start()
		for ran.Load() < jobs {
			time.Sleep(time.Millisecond)
		}
		took := time.Since(began)
		e.Stop(context.Background())
		if got := st.heldEmpty.Load(); got != 0 {
			t.Errorf("%d claims took nothing because the queue was full (%d claims in all), want 0", got, st.claims.Load())
		}
		if got := peak.Load(); got > workers {
			t.Errorf("%d jobs ran at once, limit %d", got, workers)
		}
		// A round trip per pool's worth, and one for the first claim: 11
		// ms for 40 jobs on 4 workers; a claim beside each Finish that
		// finds the queue full and then one after it take twice that (22
		// ms, and heldEmpty counts those claims). How the four outcomes
		// of a pool's worth batch into FinishClaims depends on the order
		// the goroutines run in, fake time or not: 11–17 ms seen (most
		// often above 12 under -race, where the order varies more).
		if limit := time.Duration(2*jobs/workers) * time.Millisecond; took > limit {
			t.Errorf("%d jobs took %v of fake time, want at most %v", jobs, took, limit)
		}
	})
}
