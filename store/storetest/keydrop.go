package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// wantKeyDropped fails the test unless res dropped exactly ids (in any
// order), each cancelled at now with the reason of key of queue under r,
// its attempt count untouched, and the store says the same of each.
func (e *env) wantKeyDropped(res store.ClaimResult, ids []job.ID, queue, key string, r store.Rate, now time.Time) {
	e.t.Helper()
	e.wantDropReasons(res, reasons(store.KeyDropReason(queue, key, r), ids...), now)
}

// wantNoDropPausedOrNoRoom pauses queue at ms milliseconds and claims,
// then resumes it and claims with no room for it (up to ms+3): neither
// claim may take or drop a job.
func (e *env) wantNoDropPausedOrNoRoom(ms int, queue string) {
	e.t.Helper()
	e.pause(at(ms), queue, true)
	if res := e.wantClaimed(store.ClaimParams{Now: at(ms + 1), Limit: 10}, 0, "a paused queue"); len(res.Dropped) != 0 {
		e.t.Errorf("a paused queue dropped %v", idsOf(res.Dropped))
	}
	e.pause(at(ms+2), queue, false)
	if res := e.wantClaimed(store.ClaimParams{Now: at(ms + 3), Limit: 10, QueueLimits: map[string]int{queue: 0}}, 0,
		"no room for the queue"); len(res.Dropped) != 0 {
		e.t.Errorf("a claim with no room for the queue dropped %v", idsOf(res.Dropped))
	}
}

func keyDropCases() []testCase {
	return []testCase{
		{"KeyThrottleDropsExcess", func(t *testing.T, e *env) {
			// 1/1m per key with a burst of 2 and Drop: a claim takes the
			// keys in turn as if unthrottled; key a's first 2 start, the
			// jobs of a it then comes to are dropped, with the reason;
			// other keys and the keyless job start.
			e.keyControl()
			r := store.Rate{N: 1, Period: time.Minute, Burst: 2, Drop: true}
			if got := e.setKeyRate(t0, "q", r); got.KeyRate != r {
				t.Fatalf("SetQueue: key rate %+v, want %+v", got.KeyRate, r)
			}
			if got, want := store.KeyDropReason("api", "tenant=42", store.Rate{N: 1, Period: time.Minute, Drop: true}),
				"dropped: key tenant=42 of queue api over its rate 1/1m"; got != want {
				t.Errorf("KeyDropReason: %q, want %q", got, want)
			}
			a := e.keyed(t0, "q", "a", 5)
			b := e.keyed(t0, "q", "b", 1)
			keyless := e.add(t0, &job.Job{Kind: "k", Queue: "q"})
			res := e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 10, Queues: []string{"q"}}, 4, "the first claim")
			if got, want := sortedIDs(res.Jobs), slices.Sorted(slices.Values([]job.ID{a[0], a[1], b[0], keyless})); !slices.Equal(got, want) {
				t.Errorf("started %v, want %v", got, want)
			}
			e.wantKeyDropped(res, a[2:5], "q", "a", r, at(1))
			if !res.ThrottledUntil.IsZero() || res.Held {
				t.Errorf("a claim that dropped: ThrottledUntil %v, Held %v; want zero, false", res.ThrottledUntil, res.Held)
			}
			if th, ok := e.keyThrottle("q", "a"); !ok || th.TAT != store.UnixNanos(at(1).Add(2*time.Minute)) || th.Rate != r {
				t.Errorf("key a's state: %+v (row %v), want TAT 2 min after 1 ms under %v: drops take no start", th, ok, r)
			}
			// Bounded: a claim of 2 drops 2, the rest wait; the next
			// claim drops them, whatever its kinds filter leaves out.
			more := e.keyed(at(2), "q", "a", 4)
			res = e.wantClaimed(store.ClaimParams{Now: at(3), Limit: 2}, 0, "a claim of 2")
			e.wantKeyDropped(res, more[:2], "q", "a", r, at(3))
			for _, id := range more[2:] {
				e.wantState(id, job.StateAvailable)
			}
			res = e.wantClaimed(store.ClaimParams{Now: at(4), Limit: 10, Kinds: []string{"other"}}, 0, "a claim of other kinds")
			if len(res.Dropped) != 0 {
				t.Errorf("a claim of other kinds dropped %v", idsOf(res.Dropped))
			}
			res = e.wantClaimed(store.ClaimParams{Now: at(5), Limit: 10, Kinds: []string{"k"}}, 0, "the rest")
			e.wantKeyDropped(res, more[2:], "q", "a", r, at(5))
			// A minute on, a has a start again: its next job runs.
			next := e.keyed(at(6), "q", "a", 1)
			e.wantClaimed(store.ClaimParams{Now: at(1).Add(time.Minute), Limit: 10}, 1, "a minute on")
			e.wantState(next[0], job.StateRunning)
			// A rate per key without Drop holds its excess.
			e.setKeyRate(at(7), "h", store.Rate{N: 1, Period: time.Minute})
			h := e.keyed(at(7), "h", "x", 3)
			res = e.wantClaimed(store.ClaimParams{Now: at(8), Limit: 10, Queues: []string{"h"}}, 1, "the holding queue")
			if len(res.Dropped) != 0 || !res.ThrottledUntil.Equal(at(8).Add(time.Minute)) {
				t.Errorf("a holding key rate: dropped %v, ThrottledUntil %v; want none, %v", idsOf(res.Dropped), res.ThrottledUntil, at(8).Add(time.Minute))
			}
			for _, id := range h[1:] {
				e.wantState(id, job.StateAvailable)
			}
		}},
		{"KeyThrottleDropsOnlyForItsRate", func(t *testing.T, e *env) {
			// A key at its limit, a paused key, a paused queue and a
			// claim with no room for the queue drop nothing; a key with
			// a free slot but no start drops at most its free slots a
			// claim.
			e.keyControl()
			r := store.Rate{N: 1, Period: time.Minute, Drop: true}
			e.keyLimit(t0, "q", 1)
			e.setKeyRate(t0, "q", r)
			a := e.keyed(t0, "q", "a", 4)
			b := e.keyed(t0, "q", "b", 2)
			first := e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 10}, 2, "one of each key")
			if len(first.Dropped) != 0 {
				t.Errorf("the first claim dropped %v", idsOf(first.Dropped))
			}
			res := e.wantClaimed(store.ClaimParams{Now: at(2), Limit: 10}, 0, "both keys at their limit")
			if len(res.Dropped) != 0 || !res.Held {
				t.Errorf("keys at their limit: dropped %v, Held %v; want none, true", idsOf(res.Dropped), res.Held)
			}
			e.setKey(store.SetKeyParams{Now: at(3), Queue: "q", Key: "b", Paused: new(true)})
			for _, j := range first.Jobs {
				e.finishOne(at(4), j, store.Outcome{State: job.StateCompleted})
			}
			e.wantNoDropPausedOrNoRoom(5, "q")
			// a has a free slot and no start: one drop a claim (its free
			// slots); b is paused.
			res = e.wantClaimed(store.ClaimParams{Now: at(9), Limit: 10}, 0, "a over its rate")
			e.wantKeyDropped(res, a[1:2], "q", "a", r, at(9))
			res = e.wantClaimed(store.ClaimParams{Now: at(10), Limit: 10}, 0, "a over its rate again")
			e.wantKeyDropped(res, a[2:3], "q", "a", r, at(10))
			e.wantState(a[3], job.StateAvailable)
			e.wantState(b[1], job.StateAvailable)
		}},
		{"KeyThrottleDropStateRoundTrips", func(t *testing.T, e *env) {
			// Drop on a rate per key is kept, listed (the queue's and
			// each key's), changed and cleared like the rest of it.
			e.keyControl()
			r := store.Rate{N: 3, Period: time.Minute, Drop: true}
			want := store.Rate{N: 3, Period: time.Minute, Burst: 1, Drop: true}
			if got := e.setKeyRate(at(1), "q", r); got.KeyRate != want {
				t.Errorf("SetQueue: key rate %+v, want %+v", got.KeyRate, want)
			}
			if q := e.queueState("q"); q.KeyRate != want || q.Rate.Drop {
				t.Errorf("ListQueues: %+v, want key rate %+v and no rate", q, want)
			}
			e.keyed(at(2), "q", "a", 1)
			e.wantClaimed(store.ClaimParams{Now: at(3), Limit: 5}, 1, "a's start")
			if th, ok := e.keyThrottle("q", "a"); !ok || th.Rate != want {
				t.Errorf("key a's state: %+v (row %v), want its rate %+v", th, ok, want)
			}
			hold := store.Rate{N: 3, Period: time.Minute, Burst: 1}
			e.setKeyRate(at(4), "q", hold)
			if q := e.queueState("q"); q.KeyRate != hold {
				t.Errorf("after Drop was cleared: key rate %+v, want %+v", q.KeyRate, hold)
			}
			if th, ok := e.keyThrottle("q", "a"); !ok || th.Rate != hold || th.TAT != store.UnixNanos(at(3).Add(20*time.Second)) {
				t.Errorf("key a after Drop was cleared: %+v (row %v), want its TAT kept under %+v", th, ok, hold)
			}
			if q := e.setKeyRate(at(5), "q", store.Rate{}); !q.Zero() {
				t.Errorf("SetQueue(no key rate): %+v, want the zero state", q)
			}
		}},
	}
}
