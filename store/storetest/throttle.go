package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// setRate sets queue's rate at now (the zero Rate clears it).
func (e *env) setRate(now time.Time, queue string, r store.Rate) store.QueueState {
	e.t.Helper()
	return e.setQueue(store.SetQueueParams{Now: now, Name: queue, Rate: &r})
}

// wantClaimed claims with p and fails unless it takes n jobs; it returns
// the result.
func (e *env) wantClaimed(p store.ClaimParams, n int, what string) store.ClaimResult {
	e.t.Helper()
	res := e.claim(p)
	if len(res.Jobs) != n {
		e.t.Fatalf("%s: claimed %d jobs, want %d", what, len(res.Jobs), n)
	}
	return res
}

func throttleCases() []testCase {
	return []testCase{
		{"ThrottleWithKeyLimit", func(t *testing.T, e *env) {
			// A keyed queue with a rate obeys both: 1 per key and 10/s
			// with a burst of 3 (100 ms apart). The burst takes 3 jobs
			// of 3 keys, the rate then one more (of the fourth key), and
			// a refilled burst nothing while every key is at its limit;
			// finishes free keys, and the rate still caps their starts.
			e.keyControl()
			e.keyLimit(t0, "q", 1)
			r := store.Rate{N: 10, Period: time.Second, Burst: 3}
			if got := e.setRate(t0, "q", r); got.KeyConcurrency != 1 || got.Rate != r {
				t.Fatalf("SetQueue: %+v, want key limit 1 and rate %v", got, r)
			}
			for _, k := range []string{"a", "b", "c", "d"} {
				e.keyed(t0, "q", k, 5)
			}
			running := map[string]*job.Job{}
			take := func(res store.ClaimResult, what string) {
				t.Helper()
				for _, j := range res.Jobs {
					if running[j.Key] != nil {
						t.Fatalf("%s: a second job of key %q runs", what, j.Key)
					}
					running[j.Key] = j
				}
			}
			res := e.wantClaimed(store.ClaimParams{Now: at(1000), Limit: 10, Queues: []string{"q"}}, 3, "the burst")
			take(res, "the burst")
			if want := at(1100); !res.ThrottledUntil.Equal(want) {
				t.Errorf("ThrottledUntil after the burst: %v, want %v", res.ThrottledUntil, want)
			}
			if q := e.queueState("q"); !q.TAT.Equal(at(1300)) {
				t.Errorf("TAT after 3 starts: %v, want %v", q.TAT, at(1300))
			}
			e.wantClaimed(store.ClaimParams{Now: at(1050), Limit: 10}, 0, "50 ms on")
			take(e.wantClaimed(store.ClaimParams{Now: at(1100), Limit: 10}, 1, "at 1100 ms"), "at 1100 ms")
			if len(running) != 4 {
				t.Fatalf("running keys: %d, want 4", len(running))
			}
			// A minute on the burst is back, but every key is at its limit.
			res = e.wantClaimed(store.ClaimParams{Now: at(60000), Limit: 10, Queues: []string{"q"}}, 0, "every key at its limit")
			if !res.Held {
				t.Errorf("a claim every key's limit held: Held false")
			}
			if q := e.queueState("q"); !q.TAT.Equal(at(1400)) {
				t.Errorf("TAT after a claim that started nothing: %v, want %v", q.TAT, at(1400))
			}
			for _, k := range []string{"a", "b", "c", "d"} {
				e.finishOne(at(60001), running[k], store.Outcome{State: job.StateCompleted})
				delete(running, k)
			}
			// Four keys free, the burst allows 3.
			take(e.wantClaimed(store.ClaimParams{Now: at(60002), Limit: 10}, 3, "four free keys, a burst of 3"), "after the finishes")
			e.wantClaimed(store.ClaimParams{Now: at(60003), Limit: 10}, 0, "the rate spent")
			take(e.wantClaimed(store.ClaimParams{Now: at(60102), Limit: 10}, 1, "one interval on"), "one interval on")
		}},
		{"ThrottleBurstThenSteadyRate", func(t *testing.T, e *env) {
			// 10/s with a burst of 3 (one start per 100 ms): a backlog
			// gives 3 at once, then one per 100 ms; the excess waits,
			// available, and ThrottledUntil says when the next may start.
			e.queueControl()
			r := store.Rate{N: 10, Period: time.Second, Burst: 3}
			if got := e.setRate(t0, "q", r); got.Rate != r || !got.TAT.IsZero() {
				t.Fatalf("SetQueue(rate): %+v", got)
			}
			ids := e.addN(t0, 20, "k", "q")
			p := store.ClaimParams{Now: at(1000), Limit: 10, Queues: []string{"q"}}
			res := e.wantClaimed(p, 3, "the burst")
			if want := at(1100); !res.ThrottledUntil.Equal(want) {
				t.Errorf("ThrottledUntil after the burst: %v, want %v", res.ThrottledUntil, want)
			}
			if len(res.Dropped) != 0 {
				t.Errorf("a throttle dropped %d jobs", len(res.Dropped))
			}
			e.wantState(ids[3], job.StateAvailable)
			if q := e.queueState("q"); !q.TAT.Equal(at(1300)) {
				t.Errorf("TAT after 3 starts at 1000 ms: %v, want %v", q.TAT, at(1300))
			}
			res = e.wantClaimed(store.ClaimParams{Now: at(1099), Limit: 10}, 0, "a claim 99 ms on")
			if want := at(1100); !res.ThrottledUntil.Equal(want) {
				t.Errorf("ThrottledUntil 99 ms on: %v, want %v", res.ThrottledUntil, want)
			}
			e.wantClaimed(store.ClaimParams{Now: at(1100), Limit: 10, Queues: []string{"q"}, Kinds: []string{"k"}}, 1, "at 1100 ms")
			// 250 ms on: two more (and a fraction).
			e.wantClaimed(store.ClaimParams{Now: at(1350), Limit: 10, Queues: []string{"q", "other"}}, 2, "at 1350 ms")
			// A long quiet spell refills the burst, no more.
			e.wantClaimed(store.ClaimParams{Now: at(60000), Limit: 10}, 3, "after a minute")
			// Another queue is not throttled.
			e.addN(at(60000), 5, "k", "free")
			e.wantClaimed(store.ClaimParams{Now: at(60000), Limit: 10}, 5, "the other queue")
		}},
		{"ThrottleExactOverSlidingWindows", func(t *testing.T, e *env) {
			// Claims of random sizes and forms at random times, from a
			// backlog over two lanes: each takes exactly what the GCRA
			// oracle allows, and no sliding window holds more than the
			// rate's bound.
			e.queueControl()
			r := store.Rate{N: 5, Period: 100 * time.Millisecond, Burst: 4} // 20 ms apart
			e.setRate(t0, "q", r)
			for i := range 300 {
				e.add(t0, &job.Job{Kind: []string{"a", "b"}[i%2], Queue: "q"})
			}
			rng := rand.New(rand.NewPCG(21, 63))
			oracle := store.Throttle{Rate: r.Normalized()}
			var starts []time.Time
			now := at(1000)
			forms := [][]string{nil, {"q"}, {"q", "z"}}
			for len(starts) < 250 {
				now = now.Add(time.Duration(rng.IntN(45_000)) * time.Microsecond)
				limit := 1 + rng.IntN(6)
				n := store.UnixNanos(now)
				want := oracle.Free(n, limit)
				oracle = oracle.Take(n, want)
				res := e.claim(store.ClaimParams{Now: now, Limit: limit, Queues: forms[rng.IntN(len(forms))]})
				if len(res.Jobs) != want {
					t.Fatalf("claim %d at %v (limit %d): took %d, want %d", len(starts), now.Sub(t0), limit, len(res.Jobs), want)
				}
				for range res.Jobs {
					starts = append(starts, now)
				}
			}
			for _, w := range []time.Duration{0, 20 * time.Millisecond, 100 * time.Millisecond, time.Second} {
				if got, bound := maxInWindow(starts, w), r.Bound(w); got > bound {
					t.Errorf("%d starts in a window of %v, bound %d", got, w, bound)
				}
			}
			if q := e.queueState("q"); q.TAT.UnixNano() != oracle.TAT {
				t.Errorf("TAT: %v, oracle's %v", q.TAT, store.FromUnixNanos(oracle.TAT))
			}
		}},
		{"ThrottleSustainsItsRate", func(t *testing.T, e *env) {
			// Claims every 7 ms for 2 s from a deep backlog: the starts
			// reach the rate (200 per second, 5 ms apart) with the burst
			// on top, no more and no less.
			e.queueControl()
			r := store.Rate{N: 200, Period: time.Second, Burst: 10}
			e.setRate(t0, "q", r)
			e.addN(t0, 500, "k", "q")
			total := 0
			for ms := 0; ms <= 2000; ms += 7 {
				total += len(e.claim(store.ClaimParams{Now: at(ms), Limit: 50}).Jobs)
			}
			// Starts in [0, 1995 ms]: the burst of 10, then one per 5 ms
			// up to 1995 ms: 10 + 1995/5 = 409.
			if want := 10 + 1995/5; total != want {
				t.Errorf("%d starts in 2 s, want %d", total, want)
			}
		}},
		{"ThrottleExactUnderConcurrentClaims", func(t *testing.T, e *env) {
			// Claims at once from many goroutines share one burst.
			e.queueControl()
			e.setRate(t0, "q", store.Rate{N: 1, Period: time.Hour, Burst: 5})
			e.addN(t0, 40, "k", "q")
			var mu sync.Mutex
			total := 0
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for range 4 {
						res, err := e.s.Claim(e.ctx, store.ClaimParams{Now: at(1), Limit: 2, Worker: fmt.Sprint("w", w),
							LeaseUntil: at(60000), Queues: []string{"q"}})
						if err != nil {
							t.Errorf("Claim: %v", err)
							return
						}
						mu.Lock()
						total += len(res.Jobs)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			if total != 5 {
				t.Errorf("concurrent claims took %d jobs of a queue with a burst of 5, want 5", total)
			}
		}},
		{"ThrottleDropsExcess", func(t *testing.T, e *env) {
			// A dropping queue takes what its rate allows and cancels the
			// rest of what the claim would have taken, with the reason; a
			// throttle beside it drops nothing.
			e.queueControl()
			r := store.Rate{N: 2, Period: time.Second, Burst: 2, Drop: true}
			e.setRate(t0, "d", r)
			e.setRate(t0, "t", store.Rate{N: 2, Period: time.Second, Burst: 2})
			ds := e.addN(t0, 8, "k", "d")
			ts := e.addN(t0, 5, "k", "t")
			// Limit 5 from d: 2 start, the next 3 are dropped, 3 wait.
			res := e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 5, Queues: []string{"d"}}, 2, "the dropping queue")
			if got := sortedIDs(res.Dropped); !slices.Equal(got, ds[2:5]) {
				t.Fatalf("Dropped: %v, want %v", got, ds[2:5])
			}
			if !res.ThrottledUntil.IsZero() {
				t.Errorf("a dropping queue set ThrottledUntil %v", res.ThrottledUntil)
			}
			reason := "dropped: queue d over its rate 2/1s"
			if got := store.DropReason("d", r); got != reason {
				t.Errorf("DropReason: %q, want %q", got, reason)
			}
			for _, id := range ds[2:5] {
				j := e.get(id)
				if j.State != job.StateCancelled || j.LastError != reason || !j.FinishedAt.Equal(at(1)) || j.Attempt != 0 {
					t.Errorf("dropped job %d: state %s, last error %q, finished %v, attempt %d; want cancelled, %q, %v, 0",
						id, j.State, j.LastError, j.FinishedAt, j.Attempt, reason, at(1))
				}
			}
			for _, j := range res.Dropped {
				if j.State != job.StateCancelled || j.LastError != reason {
					t.Errorf("ClaimResult.Dropped: job %d %s %q", j.ID, j.State, j.LastError)
				}
			}
			for _, id := range ds[5:] {
				e.wantState(id, job.StateAvailable)
			}
			// The throttled queue: 2 start, 3 wait.
			res = e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 5, Queues: []string{"t"}}, 2, "the throttled queue")
			if len(res.Dropped) != 0 || res.ThrottledUntil.IsZero() {
				t.Errorf("throttled queue: dropped %d, ThrottledUntil %v", len(res.Dropped), res.ThrottledUntil)
			}
			for _, id := range ts[2:] {
				e.wantState(id, job.StateAvailable)
			}
			// With a concurrency limit of 1, a claim would take at most 1:
			// no more is ever dropped, and nothing while the slot is taken.
			e.setQueue(store.SetQueueParams{Now: at(2), Name: "dc", Concurrency: new(int(1)),
				Rate: &store.Rate{N: 1, Period: time.Hour, Drop: true}})
			dc := e.addN(at(2), 3, "k", "dc")
			first := e.wantClaimed(store.ClaimParams{Now: at(3), Limit: 5, Queues: []string{"dc"}}, 1, "dc's first")
			if res := e.wantClaimed(store.ClaimParams{Now: at(4), Limit: 5, Queues: []string{"dc"}}, 0, "dc at its limit"); len(res.Dropped) != 0 {
				t.Errorf("a claim held by concurrency dropped %v", idsOf(res.Dropped))
			}
			e.finishOne(at(5), first.Jobs[0], store.Outcome{State: job.StateCompleted})
			res = e.wantClaimed(store.ClaimParams{Now: at(6), Limit: 5, Queues: []string{"dc"}}, 0, "dc over its rate")
			if got := idsOf(res.Dropped); !slices.Equal(got, dc[1:2]) {
				t.Errorf("dc over its rate with a free slot: dropped %v, want %v", got, dc[1:2])
			}
			e.wantState(dc[2], job.StateAvailable)
		}},
		{"ThrottleFollowsTheClaimsClock", func(t *testing.T, e *env) {
			// The state moves with the claims' Now (the store's clock), not
			// with any host's: a claim stamped earlier than the latest
			// starts (a host behind) gets no more, and nothing changes
			// with the wall clock of the machine running the test.
			e.queueControl()
			e.setRate(t0, "q", store.Rate{N: 1, Period: time.Second, Burst: 2})
			e.addN(t0, 10, "k", "q")
			e.wantClaimed(store.ClaimParams{Now: at(10_000), Limit: 5}, 2, "the burst")
			res := e.wantClaimed(store.ClaimParams{Now: at(5_000), Limit: 5}, 0, "a claim stamped 5 s earlier")
			if want := at(11_000); !res.ThrottledUntil.Equal(want) {
				t.Errorf("ThrottledUntil: %v, want %v", res.ThrottledUntil, want)
			}
			e.wantClaimed(store.ClaimParams{Now: at(10_999), Limit: 5}, 0, "1 ms early")
			e.wantClaimed(store.ClaimParams{Now: at(11_000), Limit: 5}, 1, "on time")
		}},
		{"ThrottleStateRoundTrips", func(t *testing.T, e *env) {
			// The rate is kept normalised; changing it keeps the state;
			// clearing it removes the queue's row; bad rates change
			// nothing.
			e.queueControl()
			got := e.setRate(t0, "q", store.Rate{N: 100, Period: time.Second})
			want := store.Rate{N: 100, Period: time.Second, Burst: 1}
			if got.Rate != want {
				t.Errorf("SetQueue(rate without burst): %+v, want %+v", got.Rate, want)
			}
			e.add(t0, &job.Job{Kind: "k", Queue: "q"})
			e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 5}, 1, "one job")
			e.setRate(at(2), "q", store.Rate{N: 50, Period: time.Second, Burst: 5, Drop: true})
			q := e.queueState("q")
			if q.Rate != (store.Rate{N: 50, Period: time.Second, Burst: 5, Drop: true}) || !q.TAT.Equal(at(11)) || !q.UpdatedAt.Equal(at(2)) {
				t.Errorf("ListQueues after a rate change: %+v, want 50/1s burst 5 drop, TAT %v", q, at(11))
			}
			qc := e.queueControl()
			for _, c := range []struct {
				r     store.Rate
				field string
			}{
				{store.Rate{N: -1, Period: time.Second}, "rate"},
				{store.Rate{N: 1}, "rate"},
				{store.Rate{N: 1, Period: time.Microsecond}, "rate"},
				{store.Rate{N: store.MaxRateN + 1, Period: time.Second}, "rate"},
				{store.Rate{N: 1, Period: time.Second, Burst: -1}, "burst"},
				{store.Rate{N: 1, Period: store.MaxPeriod, Burst: 2}, "burst"},
			} {
				_, err := qc.SetQueue(e.ctx, store.SetQueueParams{Now: at(3), Name: "q", Rate: &c.r})
				var fe *job.FieldError
				if !errors.As(err, &fe) || fe.Field != c.field {
					t.Errorf("SetQueue(rate %+v): %v, want a *job.FieldError on %s", c.r, err, c.field)
				}
			}
			if got := e.queueState("q"); got != q {
				t.Errorf("a refused rate changed the queue: %+v, was %+v", got, q)
			}
			if got := e.setRate(at(4), "q", store.Rate{}); !got.Rate.Zero() || !got.TAT.IsZero() {
				t.Errorf("SetQueue(no rate): %+v", got)
			}
			if got := e.listQueues(); len(got) != 0 {
				t.Errorf("ListQueues after clearing the rate: %+v, want none", got)
			}
		}},
	}
}

// maxInWindow returns the most of starts (sorted) in any closed window of
// length w.
func maxInWindow(starts []time.Time, w time.Duration) int {
	best, j := 0, 0
	for i := range starts {
		for starts[i].Sub(starts[j]) > w {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}
