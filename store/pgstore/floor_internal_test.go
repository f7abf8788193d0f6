package pgstore

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
)

func fk(prio, runAt, id int64) floorKey {
	return floorKey{set: true, priority: prio, runAt: runAt, id: id}
}

func TestFloorKeyOrder(t *testing.T) {
	t.Parallel()
	ordered := []floorKey{{}, fk(-5, 9, 9), fk(0, 1, 7), fk(0, 2, 1), fk(0, 2, 3), fk(1, 0, 0), lastKey}
	for i, a := range ordered {
		for j, b := range ordered {
			if got := a.less(b); got != (i < j) {
				t.Errorf("%+v.less(%+v) = %v, want %v", a, b, got, i < j)
			}
		}
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	keys := map[string]floorKey{"a": fk(-3, 1732550000123456, 0), "b\n\"c": lastKey, "d": {}}
	got := decodePayload(encodePayload(keys))
	if !maps.Equal(got, keys) {
		t.Errorf("round trip: got %+v, want %+v", got, keys)
	}
	if p := encodePayload(map[string]floorKey{}); p != "[]" || decodePayload(p) == nil || len(decodePayload(p)) != 0 {
		t.Errorf("no keys: payload %q decodes to %v, want [] and an empty map (a wake-up, not a reset)", p, decodePayload(p))
	}
	// An INSERT's payload: positions, and the first row's ID on a line of
	// its own (sqlNotifyIDs).
	rel := map[string]floorKey{"a": fk(0, 5, 2), "b": lastKey}
	if got, want := decodePayload(encodePayload(rel)+"\n1000"), (map[string]floorKey{"a": fk(0, 5, 1002), "b": lastKey}); !maps.Equal(got, want) {
		t.Errorf("payload with a base ID: got %+v, want %+v", got, want)
	}
	for _, p := range []string{"", "x", `{"q":1}`, "[]\nx"} {
		if decodePayload(p) != nil {
			t.Errorf("decodePayload(%q) is not a reset", p)
		}
	}
	many := make(map[string]floorKey)
	for i := range 100 {
		many[strings.Repeat("q", 100)+string(rune('A'+i))] = fk(0, 1, 0)
	}
	if p := encodePayload(many); p != "" {
		t.Errorf("%d-byte payload sent; want a reset past %d bytes", len(p), maxPayload)
	}
}

func TestLowestKeys(t *testing.T) {
	t.Parallel()
	at := func(us int64) time.Time { return time.UnixMicro(us).Add(700 * time.Nanosecond) }
	jobs := []*job.Job{
		{Queue: "a", Priority: 2, RunAt: at(10)},
		{Queue: "a", Priority: 1, RunAt: at(20)},
		{Queue: "a", Priority: -9, RunAt: at(5)}, // scheduled: not in jobs_claim yet
		{Queue: "b", Priority: 0, RunAt: at(7)},
	}
	states := []job.State{job.StateAvailable, job.StateAvailable, job.StateScheduled, job.StateScheduled}
	want := map[string]floorKey{"a": fk(1, 20, 101), "b": lastKey}
	if got := lowestKeys(jobs, states, func(i int) int64 { return int64(100 + i) }); !maps.Equal(got, want) {
		t.Errorf("lowestKeys = %+v, want %+v (run-at truncated to µs, as stored)", got, want)
	}
	// keyed: every job of the queue has a flow-control key, whichever is
	// lowest; it survives the payload, and the floors do not keep it.
	jobs[0].Key, jobs[2].Key, jobs[3].Key = "t1", "t2", "t3"
	got := lowestKeys(jobs, states, func(i int) int64 { return int64(100 + i) })
	if got["a"].keyed || !got["b"].keyed {
		t.Errorf("keyed: a %v (a job without a key), b %v (all keyed); want false, true", got["a"].keyed, got["b"].keyed)
	}
	jobs[1].Key = "t4"
	got = lowestKeys(jobs, states, func(i int) int64 { return int64(100 + i) })
	if k := decodePayload(encodePayload(got))["a"]; !k.keyed || k.id != 101 {
		t.Errorf("all keyed, through a payload: %+v, want keyed at ID 101", k)
	}
	f := newFloors(time.Second)
	f.known["a"] = lastKey
	f.lower(got)
	if k := f.known["a"]; k.keyed || k.id != 101 {
		t.Errorf("the floors kept the announcement's keyed flag: %+v", k)
	}
}

// claimedJobs returns jobs of queue q with keys ks, in claim order.
func claimedJobs(q string, ks ...floorKey) []*job.Job {
	out := make([]*job.Job, len(ks))
	for i, k := range ks {
		out[i] = &job.Job{Queue: q, Priority: int(k.priority), RunAt: time.UnixMicro(k.runAt), ID: job.ID(k.id)}
	}
	return out
}

func TestFloors(t *testing.T) {
	t.Parallel()
	f := newFloors(time.Hour)
	now := time.Now()

	p := f.plan(false, "", now)
	if !p.full || p.names != nil {
		t.Fatalf("first plan %+v: want a full claim that lists the queues", p)
	}
	f.claimed(p, claimedJobs("a", fk(0, 10, 1), fk(0, 10, 2)), []string{"a", "b"}, false, time.Millisecond)
	p = f.plan(false, "", now)
	if p.full || len(p.names) != 2 {
		t.Fatalf("plan after a full claim: %+v, want the 2 queues listed, not full", p)
	}
	prio, runAt, id := f.starts([]string{"a", "b", "c"}, false)
	if prio[0] != 0 || runAt[0].Time.UnixMicro() != 10 || id[0] != 1 {
		t.Errorf("queue a starts at (%d, %v, %d), want its first claimed job (0, 10µs, 1)", prio[0], runAt[0].Time, id[0])
	}
	for i := 1; i < 3; i++ {
		if prio[i] != math.MinInt64 || runAt[i].InfinityModifier >= 0 {
			t.Errorf("queue %d starts at (%d, %v): want its front", i, prio[i], runAt[i])
		}
	}

	// A claim raises the floor; a lowering meanwhile wins.
	p = f.plan(false, "", now)
	f.claimed(p, claimedJobs("a", fk(0, 20, 5)), nil, false, 0)
	if got := f.known["a"]; got != fk(0, 20, 5) {
		t.Errorf("floor after a claim: %+v, want (0, 20, 5)", got)
	}
	p = f.plan(false, "", now)
	if !f.lower(map[string]floorKey{"a": fk(0, 15, 0)}) {
		t.Error("lower below the floor reported no change")
	}
	f.claimed(p, claimedJobs("a", fk(0, 30, 6)), nil, false, 0)
	if got := f.known["a"]; got != fk(0, 15, 0) {
		t.Errorf("a claim that began before a lowering raised the floor to %+v; want (0, 15, 0) kept", got)
	}
	if f.lower(map[string]floorKey{"a": fk(0, 16, 0), "b": lastKey}) {
		t.Error("keys above known floors reported a change")
	}
	if !f.lower(map[string]floorKey{"new": lastKey}) || f.known["new"].set {
		t.Errorf("an unknown queue: %+v, want it known, at its front", f.known["new"])
	}

	// A reset makes the next claim full; a full claim that the limit cut
	// short sends the queues it took nothing from to their fronts.
	f.reset()
	p = f.plan(true, "", now)
	if !p.full {
		t.Fatal("plan after a reset is not full")
	}
	f.known["b"] = fk(3, 3, 3)
	f.claimed(p, claimedJobs("a", fk(0, 40, 9)), nil, true, 10*time.Millisecond)
	if f.known["b"].set || f.known["a"] != fk(0, 40, 9) {
		t.Errorf("after a capped full claim: a %+v, b %+v; want a at (0, 40, 9), b at its front", f.known["a"], f.known["b"])
	}
	if p = f.plan(true, "", now.Add(59*time.Minute)); p.full {
		t.Error("full again before minRefresh")
	}
	if p = f.plan(true, "", now.Add(61*time.Minute)); !p.full {
		t.Error("not full after minRefresh")
	}
	f = newFloors(time.Millisecond)
	f.claimed(f.plan(true, "", now), nil, nil, false, time.Second)
	if p = f.plan(true, "", time.Now().Add((refreshFactor-5)*time.Second)); p.full || p.probe {
		t.Error("a full claim of 1s is repeated within refreshFactor of its durations")
	}

	// Past slowFront, the refresh is a probe beside the claims, one at a
	// time; what it finds lowers the floors.
	later := time.Now().Add((refreshFactor + 5) * time.Second)
	if p = f.plan(true, "", later); p.full || !p.probe {
		t.Fatalf("refresh after a slow full claim: %+v, want a probe, not a full claim", p)
	}
	if p = f.plan(true, "", later); p.full || p.probe {
		t.Fatalf("a second claim while probing: %+v, want neither", p)
	}
	f.claimed(p, claimedJobs("a", fk(0, 50, 1)), nil, false, 0)
	if !f.probed(map[string]floorKey{"a": fk(0, 40, 7), "b": lastKey}, 30*time.Millisecond, nil) {
		t.Error("a probe that found a job below the floor lowered nothing")
	}
	if f.known["a"] != fk(0, 40, 7) || f.known["b"].set {
		t.Errorf("after the probe: a %+v, b %+v; want a at (0, 40, 7), b known at its front", f.known["a"], f.known["b"])
	}
	if p = f.plan(true, "", time.Now().Add(5*time.Second)); p.full || p.probe {
		t.Errorf("refresh within refreshFactor of the probe's 30ms: %+v", p)
	}
	if p = f.plan(true, "", time.Now().Add(7*time.Second)); !p.probe {
		t.Errorf("no probe %v after a 30ms one: %+v", 7*time.Second, p)
	}
	f.probed(nil, time.Millisecond, nil)
	if p = f.plan(true, "", time.Now().Add(time.Second)); !p.full {
		t.Errorf("the fronts read in 1ms again, the refresh is %+v; want a full claim", p)
	}
	f.reset()
	if p = f.plan(true, "", time.Now()); !p.full {
		t.Error("after a reset the next claim is not full")
	}
	f.claimed(p, claimedJobs("a", fk(0, 60, 1)), nil, false, 0)

	// Floors raised by claims of some kinds may have jobs of other kinds
	// below them.
	if p = f.plan(true, "k1", time.Now()); !p.full {
		t.Fatal("a claim of other kinds is not full")
	}
	f.claimed(p, claimedJobs("a", fk(0, 70, 2)), nil, false, 0)
	if p = f.plan(true, "k1", time.Now()); p.full {
		t.Error("a second claim of the same kinds is full")
	}
	if p = f.plan(true, "", time.Now()); !p.full {
		t.Error("a claim of any kind after claims of k1 is not full")
	}
}

// TestFloorsKeepAnnounced: a job committed just after a claim's snapshot,
// announced (lower) before the claim is recorded, between the floor the
// claim started at and the first job it took: the announcement lowers
// nothing (the floor is below it), and the claim must not raise the floor
// past it, or the job waits below the floor until the next refresh
// (issue 19: seconds at the tail, and a growing backlog, under 8
// producers enqueueing one job per call).
func TestFloorsKeepAnnounced(t *testing.T) {
	t.Parallel()
	f := newFloors(time.Hour)
	now := time.Now()
	f.claimed(f.plan(false, "", now), claimedJobs("a", fk(0, 10, 1)), []string{"a"}, false, time.Millisecond)

	p := f.plan(false, "", now) // starts at (0, 10, 1)
	other := f.plan(false, "", now)
	if f.lower(map[string]floorKey{"a": fk(0, 25, 9)}) {
		t.Fatal("a key above the floor lowered it")
	}
	// The claim's snapshot missed job 9; it took job 7 first.
	f.claimed(p, claimedJobs("a", fk(0, 30, 7), fk(0, 31, 8)), nil, false, 0)
	if got := f.known["a"]; got != fk(0, 25, 9) {
		t.Errorf("floor after a claim that missed a job announced meanwhile: %+v, want at most (0, 25, 9)", got)
	}
	// A claim that took a job below the announced one raises the floor to
	// that job, as before.
	f.claimed(other, claimedJobs("a", fk(0, 20, 4)), nil, false, 0)
	if got := f.known["a"]; got != fk(0, 20, 4) {
		t.Errorf("floor: %+v, want (0, 20, 4)", got)
	}
	// Announcements made before a plan do not hold its claim back.
	p = f.plan(false, "", now)
	f.claimed(p, claimedJobs("a", fk(0, 40, 12)), nil, false, 0)
	if got := f.known["a"]; got != fk(0, 40, 12) {
		t.Errorf("floor after a claim with nothing announced meanwhile: %+v, want (0, 40, 12)", got)
	}
	// A full claim that lists the queues keeps a queue with a job
	// announced meanwhile, though its listing found none there.
	f.reset()
	p = f.plan(false, "", now)
	if !p.full {
		t.Fatal("plan after a reset is not full")
	}
	f.lower(map[string]floorKey{"a": fk(0, 50, 13)})
	f.claimed(p, nil, []string{}, false, time.Millisecond)
	if got, ok := f.known["a"]; !ok || !got.less(fk(0, 50, 14)) {
		t.Errorf("queue a after a full claim that listed none, with job 13 announced meanwhile: %+v (known %v); want known, at or below (0, 50, 13)", got, ok)
	}
	// Abandoned and recorded claims are forgotten.
	f.abandon(f.plan(false, "", now))
	if len(f.inflight) != 0 {
		t.Errorf("%d claims still in flight, want none", len(f.inflight))
	}
}
