package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// keyControl returns the store's store.KeyControl, or skips the case.
func (e *env) keyControl() store.KeyControl {
	e.t.Helper()
	kc, ok := e.s.(store.KeyControl)
	if !ok {
		e.t.Skip("the store does not implement store.KeyControl")
	}
	e.queueControl()
	return kc
}

// keyLimit sets queue's limit per key at now (0 clears it).
func (e *env) keyLimit(now time.Time, queue string, n int) store.QueueState {
	e.t.Helper()
	return e.setQueue(store.SetQueueParams{Now: now, Name: queue, KeyConcurrency: &n})
}

// setKey calls SetKey and fails the test on an error.
func (e *env) setKey(p store.SetKeyParams) store.KeyState {
	e.t.Helper()
	k, err := e.keyControl().SetKey(e.ctx, p)
	if err != nil {
		e.t.Fatalf("SetKey(%q, %q): %v", p.Queue, p.Key, err)
	}
	return k
}

// listKeys calls ListKeys and fails the test on an error. Each key it
// lists reads the same through GetKey, if the store is a store.KeyGetter.
func (e *env) listKeys(queue string) []store.KeyState {
	e.t.Helper()
	ks, err := e.keyControl().ListKeys(e.ctx, queue)
	if err != nil {
		e.t.Fatalf("ListKeys(%q): %v", queue, err)
	}
	for _, k := range ks {
		if got, ok := e.getKey(k.Queue, k.Key); ok && !sameKeyState(got, k) {
			e.t.Errorf("GetKey(%q, %q) = %+v, ListKeys lists %+v", k.Queue, k.Key, got, k)
		}
	}
	return ks
}

// getKey calls GetKey and fails the test on an error; false if the store
// is not a store.KeyGetter.
func (e *env) getKey(queue, key string) (store.KeyState, bool) {
	e.t.Helper()
	g, ok := e.s.(store.KeyGetter)
	if !ok {
		return store.KeyState{}, false
	}
	k, err := g.GetKey(e.ctx, queue, key)
	if err != nil {
		e.t.Fatalf("GetKey(%q, %q): %v", queue, key, err)
	}
	return k, true
}

// sameKeyState reports whether a and b are the same state, their times
// the same instants.
func sameKeyState(a, b store.KeyState) bool {
	return a.Queue == b.Queue && a.Key == b.Key && a.Running == b.Running && a.Paused == b.Paused &&
		a.PausedAt.Equal(b.PausedAt) && a.HeldUntil.Equal(b.HeldUntil) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.Throttle == b.Throttle
}

// keyed enqueues n jobs of key in queue at now and returns their IDs.
func (e *env) keyed(now time.Time, queue, key string, n int) []job.ID {
	e.t.Helper()
	ids := make([]job.ID, n)
	for i := range ids {
		ids[i] = e.add(now, &job.Job{Kind: "k", Queue: queue, Key: key})
	}
	return ids
}

// keysOf returns the keys of jobs, in order.
func keysOf(js []*job.Job) []string {
	out := make([]string, len(js))
	for i, j := range js {
		out[i] = j.Key
	}
	return out
}

func keyCases() []testCase {
	return []testCase{
		{"KeyRoundTrips", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", Key: "tenant=42"})
			if g := e.get(id); g.Key != "tenant=42" {
				t.Errorf("Get: key %q, want tenant=42", g.Key)
			}
			j := e.claimExpect(at(1), job.DefaultQueue, id)
			if j.Key != "tenant=42" {
				t.Errorf("Claim: key %q, want tenant=42", j.Key)
			}
		}},
		{"KeyConcurrencyExact", func(t *testing.T, e *env) {
			// Limit 2 per key: claims of any size take at most 2 of a
			// key; a finish frees one slot, a rescue another; the key's
			// row is collected when it holds nothing.
			e.keyControl()
			e.keyLimit(t0, "q", 2)
			e.keyed(t0, "q", "hot", 6)
			got := e.claim(store.ClaimParams{Now: at(1), Limit: 10, Queues: []string{"q"}})
			if len(got.Jobs) != 2 {
				t.Fatalf("Claim: %d jobs of the hot key, want 2", len(got.Jobs))
			}
			if !got.Held {
				t.Errorf("Claim at the key's limit: Held false")
			}
			if n := len(e.claim(store.ClaimParams{Now: at(2), Limit: 10}).Jobs); n != 0 {
				t.Errorf("Claim at the limit: %d jobs, want 0", n)
			}
			if ks := e.listKeys("q"); len(ks) != 1 || ks[0].Key != "hot" || ks[0].Running != 2 {
				t.Errorf("ListKeys at the limit: %+v, want hot running 2", ks)
			}
			e.finishOne(at(3), got.Jobs[0], store.Outcome{State: job.StateCompleted})
			next := e.claim(store.ClaimParams{Now: at(4), Limit: 10, Queues: []string{"q"}}).Jobs
			if len(next) != 1 {
				t.Fatalf("Claim after a finish: %d jobs, want 1", len(next))
			}
			rescued := e.rescue(store.RescueParams{Now: next[0].LeaseUntil.Add(time.Millisecond)})
			if len(rescued) != 2 {
				t.Fatalf("Rescue: %d jobs, want 2", len(rescued))
			}
			if ks := e.listKeys("q"); len(ks) != 0 {
				t.Errorf("ListKeys after every slot was given back: %+v, want none (collected)", ks)
			}
			now := next[0].LeaseUntil.Add(2 * time.Millisecond)
			if n := len(e.claim(store.ClaimParams{Now: now, Limit: 10}).Jobs); n != 2 {
				t.Errorf("Claim after the rescue: %d jobs, want 2", n)
			}
			// Clearing the limit lets the rest start.
			e.keyLimit(now, "q", 0)
			if n := len(e.claim(store.ClaimParams{Now: now, Limit: 10}).Jobs); n != 3 {
				t.Errorf("Claim without the limit: %d jobs, want the 3 left", n)
			}
		}},
		{"KeyRoundRobin", func(t *testing.T, e *env) {
			// Keys are served in turn: a cold key's job behind a hot
			// key's backlog starts in the next claim, and each claim
			// goes on from the key after the last it served.
			e.keyControl()
			e.keyLimit(t0, "q", 100)
			e.keyed(t0, "q", "hot", 50)
			cold := e.keyed(at(1), "q", "cold", 1)[0]
			e.keyed(at(2), "q", "warm", 2)
			none := e.add(at(3), &job.Job{Kind: "k", Queue: "q"})
			got := e.claim(store.ClaimParams{Now: at(5), Limit: 4, Queues: []string{"q"}}).Jobs
			// From the cursor "" on: cold, hot, warm, then "" (no key).
			if k := keysOf(got); len(k) != 4 || k[0] != "cold" || k[1] != "hot" || k[2] != "warm" || k[3] != "" {
				t.Errorf("first claim: keys %q, want [cold hot warm \"\"]", k)
			}
			if len(got) > 0 && got[0].ID != cold {
				t.Errorf("first claim: first job %d, want the cold key's %d", got[0].ID, cold)
			}
			if len(got) == 4 && got[3].ID != none {
				t.Errorf("first claim: last job %d, want the keyless %d", got[3].ID, none)
			}
			got = e.claim(store.ClaimParams{Now: at(6), Limit: 3, Queues: []string{"q"}}).Jobs
			if k := keysOf(got); len(k) != 3 || k[0] != "hot" || k[1] != "warm" || k[2] != "hot" {
				t.Errorf("second claim: keys %q, want [hot warm hot]", k)
			}
		}},
		{"KeyLimitSkipsBlockedBacklog", func(t *testing.T, e *env) {
			// Limit 1: the hot key's backlog waits behind its one
			// running job, and every other key's job starts.
			e.keyControl()
			e.keyLimit(t0, "q", 1)
			e.keyed(t0, "q", "hot", 200)
			first := e.claim(store.ClaimParams{Now: at(1), Limit: 1}).Jobs
			if len(first) != 1 {
				t.Fatalf("Claim: %d jobs, want 1", len(first))
			}
			var want []job.ID
			for i := range 5 {
				want = append(want, e.keyed(at(2), "q", string(rune('a'+i)), 1)...)
			}
			got := e.claim(store.ClaimParams{Now: at(3), Limit: 10}).Jobs
			wantIDList(t, "Claim behind the blocked key", sortedIDs(got), want)
		}},
		{"KeyWalkPastManyBlockedKeys", func(t *testing.T, e *env) {
			// Limit 1, 30 keys at their limit: a claim of one job walks
			// past many blocked keys, on from its cursor and around to
			// it, with and without kinds (a SQL store reads the walk in
			// runs of keys: this goes past several).
			e.keyControl()
			e.keyLimit(t0, "q", 1)
			second := map[string]job.ID{}
			for i := range 30 {
				k := fmt.Sprintf("k%02d", i)
				second[k] = e.keyed(at(1), "q", k, 2)[1]
			}
			running := map[string]*job.Job{}
			for _, j := range e.claim(store.ClaimParams{Now: at(2), Limit: 30, Queues: []string{"q"}}).Jobs {
				running[j.Key] = j
			}
			if len(running) != 30 {
				t.Fatalf("first claim: %d keys, want 30", len(running))
			}
			one := func(now time.Time, want string, kinds ...string) *job.Job {
				t.Helper()
				res := e.claim(store.ClaimParams{Now: now, Limit: 1, Queues: []string{"q"}, Kinds: kinds})
				if want == "" {
					if len(res.Jobs) != 0 || !res.Held {
						t.Fatalf("claim at %v: keys %q, held %v; want none, held", now, keysOf(res.Jobs), res.Held)
					}
					return nil
				}
				if len(res.Jobs) != 1 || res.Jobs[0].Key != want {
					t.Fatalf("claim at %v: keys %q, want [%s]", now, keysOf(res.Jobs), want)
				}
				return res.Jobs[0]
			}
			for _, k := range []string{"k03", "k17"} {
				e.finishOne(at(3), running[k], store.Outcome{State: job.StateCompleted})
			}
			// From the cursor k29: around to k03, then on past 13
			// blocked keys to k17, then around to nothing.
			if j := one(at(4), "k03"); j.ID != second["k03"] {
				t.Errorf("claim of k03: job %d, want its second %d", j.ID, second["k03"])
			}
			one(at(5), "k17")
			one(at(6), "")
			// Kinds: k20 is free but has no job of kind other; k25 has.
			for _, k := range []string{"k20", "k25"} {
				e.finishOne(at(7), running[k], store.Outcome{State: job.StateCompleted})
			}
			other := e.add(at(7), &job.Job{Kind: "other", Queue: "q", Key: "k25"})
			if j := one(at(8), "k25", "other"); j.ID != other {
				t.Errorf("claim of kind other: job %d, want %d", j.ID, other)
			}
			// From k25, around past k00…k19 to k20.
			if j := one(at(9), "k20"); j.ID != second["k20"] {
				t.Errorf("claim of k20: job %d, want its second %d", j.ID, second["k20"])
			}
		}},
		{"KeyPauseAndHold", func(t *testing.T, e *env) {
			// A paused key's jobs wait until it is resumed; a held key's
			// until the hold ends; the other keys' start.
			e.keyControl()
			p := e.keyed(t0, "q", "p", 1)[0]
			h := e.keyed(t0, "q", "h", 1)[0]
			o := e.keyed(t0, "q", "o", 1)[0]
			paused, until := true, at(1000)
			e.setKey(store.SetKeyParams{Now: t0, Queue: "q", Key: "p", Paused: &paused})
			if k := e.setKey(store.SetKeyParams{Now: t0, Queue: "q", Key: "h", HoldUntil: &until}); !k.HeldUntil.Equal(until) {
				t.Errorf("SetKey(hold): held until %v, want %v", k.HeldUntil, until)
			}
			wantIDList(t, "Claim with p paused and h held", idsOf(e.claim(store.ClaimParams{Now: at(1), Limit: 10}).Jobs), []job.ID{o})
			wantIDList(t, "Claim at the hold's end", idsOf(e.claim(store.ClaimParams{Now: at(1000), Limit: 10}).Jobs), []job.ID{h})
			resumed := false
			e.setKey(store.SetKeyParams{Now: at(1001), Queue: "q", Key: "p", Paused: &resumed})
			wantIDList(t, "Claim after the resume", idsOf(e.claim(store.ClaimParams{Now: at(1002), Limit: 10}).Jobs), []job.ID{p})
		}},
		{"KeyGetReadsOneKey", func(t *testing.T, e *env) {
			// GetKey reads one key as ListKeys lists it — slots, pause,
			// hold and throttle — and a key with no state as the zero
			// state, named; keys of other queues and other keys are not
			// it.
			e.keyControl()
			if _, ok := e.s.(store.KeyGetter); !ok {
				t.Skip("not a store.KeyGetter")
			}
			wantNone := func(what, queue, key string) {
				t.Helper()
				if k, _ := e.getKey(queue, key); !sameKeyState(k, store.KeyState{Queue: queue, Key: key}) {
					t.Errorf("GetKey(%q, %q) %s: %+v, want the zero state named", queue, key, what, k)
				}
			}
			wantNone("of a store with no keys", "q", "a")
			e.keyLimit(t0, "q", 2)
			e.setQueue(store.SetQueueParams{Now: t0, Name: "r", KeyRate: &store.Rate{N: 1, Period: time.Hour}})
			e.keyed(t0, "q", "a", 3)
			e.keyed(t0, "r", "t", 2)
			paused, until := true, at(5000)
			e.setKey(store.SetKeyParams{Now: t0, Queue: "q", Key: "p", Paused: &paused})
			e.setKey(store.SetKeyParams{Now: t0, Queue: "q", Key: "h", HoldUntil: &until})
			e.claim(store.ClaimParams{Now: at(1), Limit: 10, Queues: []string{"q"}})
			e.claim(store.ClaimParams{Now: at(1), Limit: 10, Queues: []string{"r"}})
			ks := append(e.listKeys("q"), e.listKeys("r")...) // each checked against GetKey
			if len(ks) != 4 {
				t.Fatalf("ListKeys: %+v, want a (2 running), h, p and t (throttled)", ks)
			}
			if k, _ := e.getKey("q", "a"); k.Running != 2 {
				t.Errorf("GetKey(q, a): %+v, want 2 running", k)
			}
			if k, _ := e.getKey("q", "p"); !k.Paused || !k.PausedAt.Equal(t0) {
				t.Errorf("GetKey(q, p): %+v, want paused at T", k)
			}
			if k, _ := e.getKey("q", "h"); !k.HeldUntil.Equal(until) {
				t.Errorf("GetKey(q, h): %+v, want held until %v", k, until)
			}
			if k, _ := e.getKey("r", "t"); k.Throttle.TAT != store.UnixNanos(at(1).Add(time.Hour)) || k.Throttle.Rate.N != 1 {
				t.Errorf("GetKey(r, t): %+v, want its throttle's TAT an hour after its start", k)
			}
			wantNone("of a key with no state", "q", "none")
			wantNone("of another queue's key", "r", "a")
			wantNone("of a queue with no keys", "s", "a")
		}},
		{"KeysWithJobs", func(t *testing.T, e *env) {
			// KeysWithJobs lists the keys that have a state and available
			// jobs, each as ListKeys lists it, with its available jobs
			// (not its running ones): not a key with jobs and no state,
			// not a key with a state and no jobs; keyed queues and a
			// queue no longer keyed alike.
			e.keyControl()
			counter, ok := e.s.(store.KeyJobCounter)
			if !ok {
				t.Skip("not a store.KeyJobCounter")
			}
			list := func() []store.KeyJobs {
				t.Helper()
				ks, err := counter.KeysWithJobs(e.ctx)
				if err != nil {
					t.Fatalf("KeysWithJobs: %v", err)
				}
				return ks
			}
			if ks := list(); len(ks) != 0 {
				t.Errorf("KeysWithJobs of an empty store: %+v, want none", ks)
			}
			e.keyLimit(t0, "q", 1)
			e.setQueue(store.SetQueueParams{Now: t0, Name: "r", KeyRate: &store.Rate{N: 1, Period: time.Hour}})
			e.keyLimit(t0, "u", 1)
			e.keyed(t0, "q", "a", 3)
			e.keyed(t0, "q", "b", 2)
			e.keyed(t0, "q", "c", 2) // no state until paused
			e.keyed(t0, "r", "t", 2)
			e.keyed(t0, "u", "s", 2)
			e.keyed(t0, "plain", "x", 2)
			e.add(t0, &job.Job{Kind: "k", Queue: "q"}) // keyless
			paused := true
			e.setKey(store.SetKeyParams{Now: t0, Queue: "q", Key: "idle", Paused: &paused}) // a state, no jobs
			for _, q := range []string{"q", "r", "u"} {
				e.claim(store.ClaimParams{Now: at(1), Limit: 10, Queues: []string{q}})
			}
			e.setKey(store.SetKeyParams{Now: at(2), Queue: "q", Key: "c", Paused: &paused})
			e.keyLimit(at(3), "u", 0) // u's key s keeps its running slot, u no longer keyed
			type row struct {
				queue, key string
				n          int
			}
			var got []row
			ks := list()
			for _, k := range ks {
				got = append(got, row{k.Queue, k.Key, k.Available})
			}
			want := []row{{"q", "a", 2}, {"q", "b", 1}, {"q", "c", 1}, {"r", "t", 1}, {"u", "s", 1}}
			if !slices.Equal(got, want) {
				t.Fatalf("KeysWithJobs: %v, want %v", got, want)
			}
			listed := map[[2]string]store.KeyState{}
			for _, k := range append(append(e.listKeys("q"), e.listKeys("r")...), e.listKeys("u")...) {
				listed[[2]string{k.Queue, k.Key}] = k
			}
			for _, k := range ks {
				if l := listed[[2]string{k.Queue, k.Key}]; !sameKeyState(k.KeyState, l) {
					t.Errorf("KeysWithJobs: key %s/%s %+v, ListKeys lists %+v", k.Queue, k.Key, k.KeyState, l)
				}
			}
		}},
		{"FinishClaimKeepsOutputsAndKeys", func(t *testing.T, e *env) {
			// FinishClaim does what Finish does — keeps the outcomes'
			// outputs, gives back their key slots, sets their holds —
			// and its claim, keyed queues included, sees all of it.
			fc, ok := e.s.(store.FinishClaimer)
			if !ok {
				t.Skip("not a store.FinishClaimer")
			}
			e.keyControl()
			e.keyLimit(t0, "q", 1)
			as := e.keyed(t0, "q", "a", 2)
			bs := e.keyed(at(1), "q", "b", 2)
			first := e.claim(store.ClaimParams{Now: at(2), Limit: 10, Queues: []string{"q"}}).Jobs
			wantIDList(t, "Claim at one per key", sortedIDs(first), []job.ID{as[0], bs[0]})
			a, b := first[0], first[1]
			if a.Key != "a" {
				a, b = b, a
			}
			outs := []store.Outcome{
				{ID: a.ID, Attempt: a.Attempt, Claim: a.Claims, State: job.StateCompleted, Record: record(a, at(3), job.StateCompleted.String(), ""),
					Output: packed("a out\n", "a err\n", "", 0)},
				{ID: b.ID, Attempt: b.Attempt, Claim: b.Claims, State: job.StateScheduled, RunAt: at(500), HoldKeyUntil: at(500),
					Record: job.Attempt{Attempt: b.Attempt, StartedAt: b.StartedAt, Outcome: job.OutcomeSnoozed}},
			}
			reached, res, err := fc.FinishClaim(e.ctx, store.FinishParams{Now: at(3), Outcomes: outs},
				store.ClaimParams{Now: at(3), Limit: 10, Worker: worker1, LeaseUntil: at(3).Add(lease)})
			if err != nil {
				t.Fatalf("FinishClaim: %v", err)
			}
			if len(reached) != 2 || reached[0] != job.StateCompleted || reached[1] != job.StateScheduled {
				t.Errorf("FinishClaim reached %v, want [completed scheduled]", reached)
			}
			// a's slot came back: its next job; b is held, its jobs wait.
			wantIDList(t, "FinishClaim's claim", idsOf(res.Jobs), as[1:])
			if len(res.Jobs) != 1 {
				t.FailNow()
			}
			if got := e.outputs(a.ID, 0); len(got) != 1 || string(got[0].Stdout.Data) != "a out\n" ||
				string(got[0].Stderr.Data) != "a err\n" || !got[0].Succeeded {
				t.Errorf("Outputs of the finished job: %+v, want one, succeeded, with its streams", got)
			}
			ks := e.listKeys("q")
			if len(ks) != 2 || ks[0].Key != "a" || ks[0].Running != 1 || ks[1].Key != "b" || !ks[1].HeldUntil.Equal(at(500)) {
				t.Errorf("ListKeys after FinishClaim: %+v, want a running 1, b held until %v", ks, at(500))
			}
			// The next FinishClaim gives back a's slot: nothing is left to
			// take before the hold ends, and then one job of b.
			c := res.Jobs[0]
			_, res, err = fc.FinishClaim(e.ctx, store.FinishParams{Now: at(4), Outcomes: []store.Outcome{{ID: c.ID,
				Attempt: c.Attempt, Claim: c.Claims, State: job.StateCompleted, Record: record(c, at(4), job.StateCompleted.String(), "")}}},
				store.ClaimParams{Now: at(4), Limit: 10, Worker: worker1, LeaseUntil: at(4).Add(lease)})
			if err != nil || len(res.Jobs) != 0 {
				t.Errorf("FinishClaim while b is held: %v, %v; want no jobs", idsOf(res.Jobs), err)
			}
			_, res, err = fc.FinishClaim(e.ctx, store.FinishParams{Now: at(500)},
				store.ClaimParams{Now: at(500), Limit: 10, Worker: worker1, LeaseUntil: at(500).Add(lease)})
			if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Key != "b" {
				t.Errorf("FinishClaim at the hold's end: %v, %v; want one job of b", idsOf(res.Jobs), err)
			}
		}},
		{"KeyHoldFromFinish", func(t *testing.T, e *env) {
			// An outcome's HoldKeyUntil holds the key in the finish's
			// transaction: the snoozed job and the key's others wait.
			e.keyControl()
			ids := e.keyed(t0, "q", "k", 2)
			other := e.keyed(t0, "q", "z", 1)[0]
			j := e.claimExpect(at(1), "q", ids[0])
			e.finishOne(at(2), j, store.Outcome{State: job.StateScheduled, RunAt: at(500), HoldKeyUntil: at(500),
				Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Outcome: job.OutcomeSnoozed}})
			wantIDList(t, "Claim while the key is held", idsOf(e.claim(store.ClaimParams{Now: at(3), Limit: 10}).Jobs), []job.ID{other})
			if ks := e.listKeys("q"); len(ks) != 1 || !ks[0].HeldUntil.Equal(at(500)) {
				t.Errorf("ListKeys: %+v, want k held until %v", ks, at(500))
			}
			wantIDList(t, "Claim after the hold", sortedIDs(e.claim(store.ClaimParams{Now: at(500), Limit: 10}).Jobs), ids)
		}},
		{"KeyConcurrencyExactUnderConcurrentClaims", func(t *testing.T, e *env) {
			// Many claims at once, with finishes between them, never
			// have more than the limit of one key running.
			e.keyControl()
			e.keyLimit(t0, "q", 2)
			for _, k := range []string{"a", "b", "c"} {
				e.keyed(t0, "q", k, 8)
			}
			var mu sync.Mutex
			running := map[string]int{}
			var wg sync.WaitGroup
			for w := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 6 {
						res, err := e.s.Claim(e.ctx, store.ClaimParams{Now: at(1), Limit: 2, Worker: fmt.Sprint("w", w),
							LeaseUntil: at(60000), Queues: []string{"q"}})
						if err != nil {
							t.Errorf("Claim: %v", err)
							return
						}
						mu.Lock()
						for _, j := range res.Jobs {
							if running[j.Key]++; running[j.Key] > 2 {
								t.Errorf("key %s: %d running, limit 2", j.Key, running[j.Key])
							}
						}
						mu.Unlock()
						for _, j := range res.Jobs {
							mu.Lock()
							running[j.Key]--
							mu.Unlock()
							// Counted off before the finish commits: a
							// claim after it may take the slot.
							if _, err := e.s.Finish(e.ctx, store.FinishParams{Now: at(2), Outcomes: []store.Outcome{{
								ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted, Record: record(j, at(2), "completed", "")}}}); err != nil {
								t.Errorf("Finish: %v", err)
							}
						}
					}
				}()
			}
			wg.Wait()
		}},
		{"KeySetRefusesBadInput", func(t *testing.T, e *env) {
			kc := e.keyControl()
			for _, p := range []store.SetKeyParams{{Queue: "q"}, {Queue: "", Key: "k"}} {
				if _, err := kc.SetKey(e.ctx, p); !isField(err) {
					t.Errorf("SetKey(%+v): %v, want a field error", p, err)
				}
			}
			n := -1
			if _, err := e.queueControl().SetQueue(e.ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &n}); !isField(err) {
				t.Errorf("SetQueue(key concurrency -1): %v, want a field error", err)
			}
		}},
	}
}

// isField reports whether err is a *job.FieldError.
func isField(err error) bool {
	var fe *job.FieldError
	return errors.As(err, &fe)
}
