package storetest

import (
	"slices"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func claimCases() []testCase {
	return []testCase{
		{"ClaimOrdersByPriorityThenRunAtThenID", func(t *testing.T, e *env) {
			res := e.enqueue(t0,
				&job.Job{Kind: "A", Priority: 0, RunAt: at(-1000)},
				&job.Job{Kind: "B", Priority: 5, RunAt: at(-9000)},
				&job.Job{Kind: "C", Priority: -3, RunAt: at(-500)},
				&job.Job{Kind: "D", Priority: 0, RunAt: at(-2000)},
				&job.Job{Kind: "E", Priority: 0, RunAt: at(-1000)},
				&job.Job{Kind: "F", Priority: -3, RunAt: at(-500)},
				&job.Job{Kind: "G", Priority: -100, RunAt: at(-1)},
			)
			id := func(i int) job.ID { return res[i].ID }
			want := []job.ID{id(6), id(2), id(5), id(3), id(0), id(4), id(1)} // G C F D A E B
			var got []job.ID
			for range want {
				got = append(got, e.claimIDs(t0, 1)...)
			}
			wantIDList(t, "Claim one at a time", got, want)
			wantIDList(t, "Claim of an empty queue", e.claimIDs(t0, 10), nil)
		}},
		{"ClaimReuse", func(t *testing.T, e *env) {
			// ClaimParams.Reuse: a store may fill the jobs it is given, at
			// their index, and must then keep no reference to them; what it
			// returns is the same whether it does or not.
			a := e.add(t0, &job.Job{Kind: "k", Queue: "reuse", Args: []byte(`{"n":1}`)})
			b := e.add(t0, &job.Job{Kind: "k", Queue: "reuse", Args: []byte(`{"n":2}`), UniqueKey: "reuse-b"})
			first := e.claimExpect(t0, "reuse", a)
			e.finishOne(at(10), first, store.Outcome{State: job.StateRetrying, RunAt: at(20), Error: "e"})
			junk := func() *job.Job {
				return &job.Job{ID: 99, Kind: "junk", Args: []byte(`"junk"`), Attempts: make([]job.Attempt, 3),
					Result: []byte(`1`), LastError: "junk", UniqueKey: "junk", Schedule: "junk", Crashes: 7, Claims: 7}
			}
			reuse := []*job.Job{junk(), junk(), junk()}
			res := e.claim(store.ClaimParams{Now: at(30), Limit: 3, Worker: "w", LeaseUntil: at(90), Queues: []string{"reuse"}, Reuse: reuse})
			wantIDList(t, "Claim with Reuse", idsOf(res.Jobs), []job.ID{b, a})
			for i, j := range res.Jobs {
				if j != reuse[i] && slices.Contains(reuse, j) {
					t.Errorf("Claim: job %d is Reuse[%d] returned at index %d", j.ID, slices.Index(reuse, j), i)
				}
				e.wantJob("claimed into Reuse", j, e.get(j.ID))
			}
			before := []*job.Job{e.get(b).Clone(), e.get(a).Clone()}
			for _, j := range append(res.Jobs, reuse...) { // the caller's now
				for i := range j.Args {
					j.Args[i] = ' '
				}
				for i := range j.Attempts {
					j.Attempts[i].Error = "junk"
				}
				*j = *junk()
			}
			for _, want := range before {
				e.wantJob("after the caller reused its copies", e.get(want.ID), want)
			}
		}},
		{"ClaimFutureJobNeverBlocksReadyJob", func(t *testing.T, e *env) {
			later := e.add(t0, &job.Job{Kind: "later", Priority: -10, RunAt: at(60000)})
			soon := e.add(t0, &job.Job{Kind: "soon", Priority: -10, RunAt: at(1)})
			ready := e.add(t0, &job.Job{Kind: "ready", Priority: 10})
			res := e.claim(store.ClaimParams{Now: t0, Limit: 1})
			wantIDList(t, "Claim at t0", idsOf(res.Jobs), []job.ID{ready})
			wantTime(t, "ClaimResult.NextRunAt", res.NextRunAt, at(1))
			wantIDList(t, "Claim at t0+1ms", e.claimIDs(at(1), 10), []job.ID{soon})
			wantIDList(t, "Claim at t0+60s", e.claimIDs(at(60000), 10), []job.ID{later})
		}},
		{"ClaimUrgentLaterJobRunsFirstOnceBothAreReady", func(t *testing.T, e *env) {
			// A single heap keyed by (run-at, priority) would run the
			// low-priority job ready earlier before the urgent job that
			// became ready later, although both are ready.
			low := e.add(t0, &job.Job{Kind: "low", Priority: 10, RunAt: at(1000)})
			urgent := e.add(t0, &job.Job{Kind: "urgent", Priority: -5, RunAt: at(2000)})
			wantIDList(t, "Claim at t0+3s", e.claimIDs(at(3000), 1), []job.ID{urgent})
			wantIDList(t, "second Claim at t0+3s", e.claimIDs(at(3000), 1), []job.ID{low})
		}},
		{"ClaimPromotedUrgentJobOvertakesAvailableJob", func(t *testing.T, e *env) {
			low := e.add(t0, &job.Job{Kind: "low", Priority: 10})
			urgent := e.add(t0, &job.Job{Kind: "urgent", Priority: -5, RunAt: at(2000)})
			// A claim of another queue in between must not change the outcome.
			wantIDList(t, "Claim of another queue", sortedIDs(e.claim(store.ClaimParams{Now: at(1000), Limit: 1, Queues: []string{"other"}}).Jobs), nil)
			wantIDList(t, "Claim at t0+2s", e.claimIDs(at(2000), 1), []job.ID{urgent})
			wantIDList(t, "second Claim at t0+2s", e.claimIDs(at(2000), 1), []job.ID{low})
		}},
		{"ClaimPromotesDueScheduledAndRetryingJobs", func(t *testing.T, e *env) {
			sched := e.add(t0, &job.Job{Kind: "sched", RunAt: at(1000)})
			retry := e.add(t0, &job.Job{Kind: "retry"})
			c := e.claimExpect(t0, job.DefaultQueue, retry)
			e.finishOne(t0, c, store.Outcome{State: job.StateRetrying, RunAt: at(2000), Error: "boom"})

			res := e.claim(store.ClaimParams{Now: at(1500), Limit: 10})
			wantIDList(t, "Claim at t0+1.5s", sortedIDs(res.Jobs), []job.ID{sched})
			wantTime(t, "ClaimResult.NextRunAt at t0+1.5s", res.NextRunAt, at(2000))
			e.wantState(retry, job.StateRetrying)

			res = e.claim(store.ClaimParams{Now: at(2000), Limit: 10})
			wantIDList(t, "Claim at t0+2s (run-at equals now)", sortedIDs(res.Jobs), []job.ID{retry})
			if len(res.Jobs) == 1 && res.Jobs[0].Attempt != 2 {
				t.Errorf("retried job: got attempt %d, want 2", res.Jobs[0].Attempt)
			}
			if !res.NextRunAt.IsZero() {
				t.Errorf("ClaimResult.NextRunAt: got %v, want zero", res.NextRunAt)
			}
		}},
		{"ClaimPromotesDueJobsBeyondLimit", func(t *testing.T, e *env) {
			a := e.add(t0, &job.Job{Kind: "a", RunAt: at(1000)})
			b := e.add(t0, &job.Job{Kind: "b", RunAt: at(1001)})
			res := e.claim(store.ClaimParams{Now: at(2000), Limit: 1})
			wantIDList(t, "Claim", idsOf(res.Jobs), []job.ID{a})
			e.wantState(b, job.StateAvailable)
			if !res.NextRunAt.IsZero() {
				t.Errorf("ClaimResult.NextRunAt: got %v, want zero (the other job was promoted)", res.NextRunAt)
			}
		}},
		{"ClaimQueuesFilter", func(t *testing.T, e *env) {
			a1 := e.add(t0, &job.Job{Kind: "k", Queue: "a"})
			b1 := e.add(t0, &job.Job{Kind: "k", Queue: "b", Priority: -10})
			c1 := e.add(t0, &job.Job{Kind: "k", Queue: "c"})
			a2 := e.add(t0, &job.Job{Kind: "k", Queue: "a"})
			got := sortedIDs(e.claim(store.ClaimParams{Now: t0, Limit: 10, Queues: []string{"a", "c"}}).Jobs)
			wantIDList(t, "Claim of queues a, c", got, []job.ID{a1, c1, a2})
			e.wantState(b1, job.StateAvailable)
			got = sortedIDs(e.claim(store.ClaimParams{Now: t0, Limit: 10, Queues: []string{"nope"}}).Jobs)
			wantIDList(t, "Claim of an unknown queue", got, nil)
			got = sortedIDs(e.claim(store.ClaimParams{Now: t0, Limit: 10, Queues: []string{"b"}}).Jobs)
			wantIDList(t, "Claim of queue b", got, []job.ID{b1})
		}},
		{"ClaimQueueLimits", func(t *testing.T, e *env) {
			add := func(n int, queue string, prio int) []job.ID {
				var ids []job.ID
				for range n {
					ids = append(ids, e.add(t0, &job.Job{Kind: "k", Queue: queue, Priority: prio}))
				}
				return ids
			}
			a, b, c := add(3, "a", -1), add(2, "b", -1), add(3, "c", 0)
			got := sortedIDs(e.claim(store.ClaimParams{Now: t0, Limit: 10, QueueLimits: map[string]int{"a": 1, "b": 0}}).Jobs)
			wantIDList(t, "Claim with limits a:1 b:0", got, []job.ID{a[0], c[0], c[1], c[2]})
			got = sortedIDs(e.claim(store.ClaimParams{Now: t0, Limit: 1, QueueLimits: map[string]int{"a": 5}}).Jobs)
			wantIDList(t, "Claim with Limit 1 and limit a:5", got, []job.ID{a[1]})
			got = sortedIDs(e.claim(store.ClaimParams{Now: t0, Limit: 10, Queues: []string{"a", "b"}, QueueLimits: map[string]int{"a": 0}}).Jobs)
			wantIDList(t, "Claim of a, b with limit a:0", got, b)
			e.wantState(a[2], job.StateAvailable)
		}},
		{"ClaimLimit", func(t *testing.T, e *env) {
			ids := e.addN(t0, 5, "k", "")
			wantIDList(t, "Claim limit 2", e.claimIDs(t0, 2), ids[:2])
			wantIDList(t, "Claim limit 10", e.claimIDs(t0, 10), ids[2:])
			wantIDList(t, "Claim limit 10 again", e.claimIDs(t0, 10), nil)
		}},
		{"ClaimSetsRunningFields", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", RunAt: at(-50)})
			res := e.claim(store.ClaimParams{Now: at(100), Limit: 1, Worker: "w-7", LeaseUntil: at(30100)})
			if len(res.Jobs) != 1 {
				t.Fatalf("Claim: got IDs %v, want [%d]", idsOf(res.Jobs), id)
			}
			for what, j := range map[string]*job.Job{"claimed": res.Jobs[0], "Get": e.get(id)} {
				if j.ID != id || j.State != job.StateRunning || j.Attempt != 1 || j.Worker != "w-7" || j.CancelRequested {
					t.Errorf("%s job: got ID %d state %s attempt %d worker %q cancel %v, want %d running 1 w-7 false",
						what, j.ID, j.State, j.Attempt, j.Worker, j.CancelRequested, id)
				}
				wantTime(t, what+" StartedAt", j.StartedAt, at(100))
				wantTime(t, what+" LeaseUntil", j.LeaseUntil, at(30100))
				wantTime(t, what+" CreatedAt", j.CreatedAt, t0)
				if j.Kind != "k" || j.Queue != job.DefaultQueue || j.MaxAttempts != maxAttempts {
					t.Errorf("%s job: got kind %q queue %q max attempts %d, want k default %d", what, j.Kind, j.Queue, j.MaxAttempts, maxAttempts)
				}
			}
		}},
		{"ClaimIncrementsAttempt", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			e.finishOne(at(20), c, store.Outcome{State: job.StateRetrying, RunAt: at(1000), Error: "boom"})
			res := e.claim(store.ClaimParams{Now: at(1000), Limit: 1, Worker: worker2})
			if len(res.Jobs) != 1 {
				t.Fatalf("second Claim: got IDs %v, want [%d]", idsOf(res.Jobs), id)
			}
			j := res.Jobs[0]
			if j.Attempt != 2 || j.CancelRequested || j.Worker != worker2 {
				t.Errorf("second claim: got attempt %d cancel %v worker %q, want 2 false %q", j.Attempt, j.CancelRequested, j.Worker, worker2)
			}
			wantTime(t, "second claim StartedAt", j.StartedAt, at(1000))
		}},
		{"ClaimOnlyGivenKinds", func(t *testing.T, e *env) {
			mine := e.add(t0, &job.Job{Kind: "mine", Priority: 5})
			e.add(t0, &job.Job{Kind: "theirs", Priority: -5})
			e.add(t0, &job.Job{Kind: "theirs", RunAt: at(50)})
			later := e.add(t0, &job.Job{Kind: "mine", RunAt: at(100)})
			res := e.claim(store.ClaimParams{Now: at(10), Limit: 10, Kinds: []string{"mine", "other"}})
			wantIDList(t, "Claim of kinds mine, other", idsOf(res.Jobs), []job.ID{mine})
			wantTime(t, "NextRunAt of the claimed kinds", res.NextRunAt, at(100))
			res = e.claim(store.ClaimParams{Now: at(100), Limit: 10, Kinds: []string{"mine"}, Queues: []string{job.DefaultQueue}})
			wantIDList(t, "Claim of kind mine in its queue", idsOf(res.Jobs), []job.ID{later})
			if n := len(e.claim(store.ClaimParams{Now: at(100), Limit: 10, Kinds: []string{"nobody"}}).Jobs); n != 0 {
				t.Errorf("Claim of a kind without jobs: got %d jobs", n)
			}
		}},
		{"ClaimNextRunAt", func(t *testing.T, e *env) {
			res := e.claim(store.ClaimParams{Now: t0, Limit: 10})
			if len(res.Jobs) != 0 || !res.NextRunAt.IsZero() {
				t.Errorf("Claim of an empty store: got IDs %v NextRunAt %v, want none and zero", idsOf(res.Jobs), res.NextRunAt)
			}
			retry := e.inState(t0, &job.Job{Kind: "retry"}, job.StateRunning)
			e.finishOne(t0, retry, store.Outcome{State: job.StateRetrying, RunAt: at(3000), Error: "boom"})
			sched := e.add(t0, &job.Job{Kind: "sched", RunAt: at(5000)})
			avail := e.addN(t0, 2, "avail", "")
			res = e.claim(store.ClaimParams{Now: t0, Limit: 1})
			wantIDList(t, "Claim at t0", idsOf(res.Jobs), avail[:1])
			wantTime(t, "NextRunAt at t0 (available and running jobs do not count)", res.NextRunAt, at(3000))
			res = e.claim(store.ClaimParams{Now: at(3000), Limit: 10})
			wantIDList(t, "Claim at t0+3s", sortedIDs(res.Jobs), []job.ID{retry.ID, avail[1]})
			wantTime(t, "NextRunAt at t0+3s", res.NextRunAt, at(5000))
			res = e.claim(store.ClaimParams{Now: at(5000), Limit: 10})
			wantIDList(t, "Claim at t0+5s", sortedIDs(res.Jobs), []job.ID{sched})
			if !res.NextRunAt.IsZero() {
				t.Errorf("NextRunAt at t0+5s: got %v, want zero", res.NextRunAt)
			}
		}},
		{"ClaimNextRunAtCoversOnlyClaimedQueues", func(t *testing.T, e *env) {
			e.add(t0, &job.Job{Kind: "k", Queue: "b", RunAt: at(1000)})
			e.add(t0, &job.Job{Kind: "k", Queue: "a", RunAt: at(5000)})
			e.add(t0, &job.Job{Kind: "k", Queue: "c", RunAt: at(7000)})
			res := e.claim(store.ClaimParams{Now: t0, Limit: 10, Queues: []string{"a", "c"}})
			wantTime(t, "NextRunAt of queues a, c", res.NextRunAt, at(5000))
			res = e.claim(store.ClaimParams{Now: t0, Limit: 10})
			wantTime(t, "NextRunAt of every queue", res.NextRunAt, at(1000))
		}},
		{"ClaimReturnsCopies", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			c.State, c.Attempt, c.Worker, c.Kind = job.StateCompleted, 9, "thief", "changed"
			if g := e.get(id); g.State != job.StateRunning || g.Attempt != 1 || g.Worker != worker1 || g.Kind != "k" {
				t.Errorf("Get after changing the claimed job: got state %s attempt %d worker %q kind %q, want running 1 %q k",
					g.State, g.Attempt, g.Worker, g.Kind, worker1)
			}
		}},
	}
}
