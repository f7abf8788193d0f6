package storetest

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// wantDropReasons fails the test unless res dropped exactly the jobs of
// want (in any order), each cancelled at now with its reason in want, its
// attempt count untouched, and the store says the same of each.
func (e *env) wantDropReasons(res store.ClaimResult, want map[job.ID]string, now time.Time) {
	e.t.Helper()
	if got, ids := sortedIDs(res.Dropped), slices.Sorted(maps.Keys(want)); !slices.Equal(got, ids) {
		e.t.Fatalf("Dropped: %v, want %v", got, ids)
	}
	for _, j := range res.Dropped {
		if j.State != job.StateCancelled || j.LastError != want[j.ID] {
			e.t.Errorf("ClaimResult.Dropped: job %d %s %q, want cancelled %q", j.ID, j.State, j.LastError, want[j.ID])
		}
	}
	for id, reason := range want {
		j := e.get(id)
		if j.State != job.StateCancelled || j.LastError != reason || !j.FinishedAt.Equal(now) || j.Attempt != 0 {
			e.t.Errorf("dropped job %d: state %s, last error %q, finished %v, attempt %d; want cancelled, %q, %v, 0",
				id, j.State, j.LastError, j.FinishedAt, j.Attempt, reason, now)
		}
	}
}

// reasons maps each of ids to reason.
func reasons(reason string, ids ...job.ID) map[job.ID]string {
	out := make(map[job.ID]string, len(ids))
	for _, id := range ids {
		out[id] = reason
	}
	return out
}

// keyRunning returns how many slots key of queue holds (ListKeys).
func (e *env) keyRunning(queue, key string) int {
	e.t.Helper()
	for _, k := range e.listKeys(queue) {
		if k.Key == key {
			return k.Running
		}
	}
	return 0
}

func keyedRateDropCases() []testCase {
	return []testCase{
		{"KeyedQueueRateDropsExcess", func(t *testing.T, e *env) {
			// A keyed queue (2 per key) with 1/1m, a burst of 2 and
			// Drop: a claim walks the keys in turn over its room as if
			// the rate did not bind (a0 b0 "" a1 b1, each key up to its
			// free slots); the first 2 start, the other 3 are dropped
			// with the queue's reason. Drops take no slot and no token.
			e.keyControl()
			e.keyLimit(t0, "q", 2)
			r := store.Rate{N: 1, Period: time.Minute, Burst: 2, Drop: true}
			if got := e.setRate(t0, "q", r); got.Rate != r || got.KeyConcurrency != 2 {
				t.Fatalf("SetQueue: %+v, want rate %v and 2 per key", got, r)
			}
			a := e.keyed(t0, "q", "a", 3)
			b := e.keyed(t0, "q", "b", 3)
			keyless := e.add(t0, &job.Job{Kind: "k", Queue: "q"})
			res := e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 10}, 2, "the first claim")
			if got, want := idsOf(res.Jobs), []job.ID{a[0], b[0]}; !slices.Equal(got, want) {
				t.Errorf("started %v, want %v (the first 2 in turn)", got, want)
			}
			reason := store.DropReason("q", r)
			if reason != "dropped: queue q over its rate 1/1m" {
				t.Errorf("DropReason: %q", reason)
			}
			e.wantDropReasons(res, reasons(reason, keyless, a[1], b[1]), at(1))
			if !res.ThrottledUntil.IsZero() {
				t.Errorf("a claim that dropped set ThrottledUntil %v", res.ThrottledUntil)
			}
			if q := e.queueState("q"); !q.TAT.Equal(at(1).Add(2 * time.Minute)) {
				t.Errorf("the queue's TAT: %v, want 2 min after 1 ms (its 2 starts only)", q.TAT)
			}
			for _, k := range []string{"a", "b"} {
				if n := e.keyRunning("q", k); n != 1 {
					t.Errorf("key %s holds %d slots, want 1 (drops take none)", k, n)
				}
			}
			e.wantState(a[2], job.StateAvailable)
			e.wantState(b[2], job.StateAvailable)
			// No start left: the next claim drops what its walk comes
			// to — one more of each key, its free slot — and a claim of
			// 1 drops at most 1.
			more := e.keyed(at(2), "q", "c", 2)
			res = e.wantClaimed(store.ClaimParams{Now: at(3), Limit: 1}, 0, "a claim of 1")
			e.wantDropReasons(res, reasons(reason, more[0]), at(3))
			res = e.wantClaimed(store.ClaimParams{Now: at(4), Limit: 10}, 0, "no start left")
			e.wantDropReasons(res, reasons(reason, a[2], b[2], more[1]), at(4))
			if q := e.queueState("q"); !q.TAT.Equal(at(1).Add(2 * time.Minute)) {
				t.Errorf("the queue's TAT after drops only: %v, want it unmoved", q.TAT)
			}
			// A minute on, the rate has a start again.
			next := e.keyed(at(5), "q", "d", 2)
			res = e.wantClaimed(store.ClaimParams{Now: at(1).Add(time.Minute), Limit: 10}, 1, "a minute on")
			e.wantDropReasons(res, reasons(reason, next[1]), at(1).Add(time.Minute))
			e.wantState(next[0], job.StateRunning)
		}},
		{"KeyedQueueRateDropOnlyWhenItBinds", func(t *testing.T, e *env) {
			// 1 per key, a limit of 2 and 1/1h with Drop on the queue:
			// a claim drops at most its room less its starts; a rate
			// that allows the walk's every job drops nothing; keys at
			// their limit or paused, a paused queue, a queue at its
			// limit and a claim with no room for it drop nothing; a
			// rate without Drop holds.
			e.keyControl()
			e.keyLimit(t0, "q", 1)
			e.setQueue(store.SetQueueParams{Now: t0, Name: "q", Concurrency: new(int(2)),
				Rate: &store.Rate{N: 1, Period: time.Hour, Drop: true}})
			ks := map[string][]job.ID{}
			for _, k := range []string{"a", "b", "c", "d"} {
				ks[k] = e.keyed(t0, "q", k, 2)
			}
			reason := store.DropReason("q", store.Rate{N: 1, Period: time.Hour})
			res := e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 10}, 1, "room 2, one start")
			if res.Jobs[0].ID != ks["a"][0] {
				t.Errorf("started %v, want %v", idsOf(res.Jobs), ks["a"][:1])
			}
			e.wantDropReasons(res, reasons(reason, ks["b"][0]), at(1))
			res = e.wantClaimed(store.ClaimParams{Now: at(2), Limit: 10}, 0, "room 1")
			e.wantDropReasons(res, reasons(reason, ks["c"][0]), at(2))
			// The queue at its limit (now 1, with a running) drops nothing.
			e.setQueue(store.SetQueueParams{Now: at(3), Name: "q", Concurrency: new(int(1))})
			if res := e.wantClaimed(store.ClaimParams{Now: at(4), Limit: 10}, 0, "the queue at its limit"); len(res.Dropped) != 0 {
				t.Errorf("a queue at its limit dropped %v", idsOf(res.Dropped))
			}
			e.setQueue(store.SetQueueParams{Now: at(5), Name: "q", Concurrency: new(int(0))})
			e.wantNoDropPausedOrNoRoom(6, "q")
			// Key a is at its limit, b paused: the walk comes to d and c
			// only (from the cursor, c), and drops them.
			e.setKey(store.SetKeyParams{Now: at(10), Queue: "q", Key: "b", Paused: new(true)})
			res = e.wantClaimed(store.ClaimParams{Now: at(11), Limit: 10}, 0, "a at its limit, b paused")
			e.wantDropReasons(res, reasons(reason, ks["d"][0], ks["c"][1]), at(11))
			if !res.Held {
				t.Errorf("a key at its limit held its job: Held false")
			}
			e.wantState(ks["a"][1], job.StateAvailable)
			e.wantState(ks["b"][1], job.StateAvailable)
			e.wantState(ks["d"][1], job.StateAvailable)
			// A rate that allows every job the walk comes to drops
			// nothing.
			e.setRate(at(12), "w", store.Rate{N: 10, Period: time.Minute, Burst: 5, Drop: true})
			e.keyLimit(at(12), "w", 1)
			for _, k := range []string{"a", "b", "c"} {
				e.keyed(at(12), "w", k, 2)
			}
			res = e.wantClaimed(store.ClaimParams{Now: at(13), Limit: 10, Queues: []string{"w"}}, 3, "within the rate")
			if len(res.Dropped) != 0 {
				t.Errorf("a rate that allowed the walk dropped %v", idsOf(res.Dropped))
			}
			res = e.wantClaimed(store.ClaimParams{Now: at(14), Limit: 10, Queues: []string{"w"}}, 0, "every key at its limit")
			if len(res.Dropped) != 0 || !res.Held {
				t.Errorf("keys at their limit: dropped %v, Held %v; want none, true", idsOf(res.Dropped), res.Held)
			}
			// A keyed queue's rate without Drop holds its excess.
			e.keyLimit(at(15), "h", 1)
			e.setRate(at(15), "h", store.Rate{N: 1, Period: time.Minute})
			e.keyed(at(15), "h", "x", 1)
			hy := e.keyed(at(15), "h", "y", 1)
			res = e.wantClaimed(store.ClaimParams{Now: at(16), Limit: 10, Queues: []string{"h"}}, 1, "the holding queue")
			if len(res.Dropped) != 0 || !res.ThrottledUntil.Equal(at(16).Add(time.Minute)) {
				t.Errorf("a holding rate: dropped %v, ThrottledUntil %v; want none, %v", idsOf(res.Dropped), res.ThrottledUntil,
					at(16).Add(time.Minute))
			}
			e.wantState(hy[0], job.StateAvailable)
		}},
		{"KeyedQueueRateDropWithKeyRate", func(t *testing.T, e *env) {
			// Both rates drop: a job its key's rate drops gets the key's
			// reason and takes none of the queue's starts; of the jobs
			// their keys would start, the queue's rate starts the first
			// in turn and drops the rest with its reason.
			e.keyControl()
			qr := store.Rate{N: 1, Period: time.Minute, Burst: 5, Drop: true}
			kr := store.Rate{N: 1, Period: time.Minute, Burst: 2, Drop: true}
			e.setQueue(store.SetQueueParams{Now: t0, Name: "q", Rate: &qr, KeyRate: &kr})
			a := e.keyed(t0, "q", "a", 3)
			e.wantClaimed(store.ClaimParams{Now: at(1), Limit: 2}, 2, "a's burst")
			b := e.keyed(at(1), "q", "b", 2)
			c := e.keyed(at(1), "q", "c", 2)
			// 3 starts left; the turn from a: b0 c0 a2 b1 c1. a2 is
			// over a's rate; b0 c0 b1 start; c1 is over the queue's.
			res := e.wantClaimed(store.ClaimParams{Now: at(2), Limit: 10}, 3, "the second claim")
			if got, want := idsOf(res.Jobs), []job.ID{b[0], c[0], b[1]}; !slices.Equal(got, want) {
				t.Errorf("started %v, want %v", got, want)
			}
			want := reasons(store.DropReason("q", qr), c[1])
			want[a[2]] = store.KeyDropReason("q", "a", kr)
			e.wantDropReasons(res, want, at(2))
			if q := e.queueState("q"); !q.TAT.Equal(at(1).Add(5 * time.Minute)) {
				t.Errorf("the queue's TAT: %v, want 5 min after 1 ms (its 5 starts)", q.TAT)
			}
			for key, tat := range map[string]time.Time{"a": at(1).Add(2 * time.Minute), "b": at(2).Add(2 * time.Minute),
				"c": at(2).Add(time.Minute)} {
				if th, ok := e.keyThrottle("q", key); !ok || th.TAT != store.UnixNanos(tat) {
					t.Errorf("key %s's state: %+v (row %v), want TAT %v (its starts only)", key, th, ok, tat)
				}
			}
		}},
	}
}
