package storetest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func (e *env) heartbeat(p store.HeartbeatParams) store.HeartbeatResult {
	e.t.Helper()
	res, err := e.s.Heartbeat(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Heartbeat(%+v): %v", p, err)
	}
	return res
}

// leases returns the leases of the running jobs js: their IDs and claims.
func leases(js ...*job.Job) []store.Lease {
	out := make([]store.Lease, len(js))
	for i, j := range js {
		out[i] = store.Lease{ID: j.ID, Claim: j.Claims}
	}
	return out
}

// leaseIDs returns the IDs of ls.
func leaseIDs(ls []store.Lease) []job.ID {
	out := make([]job.ID, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

func (e *env) rescue(p store.RescueParams) []*job.Job {
	e.t.Helper()
	js, err := e.s.Rescue(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Rescue(%+v): %v", p, err)
	}
	return js
}

// claimAndExpire claims job id (the first ready job of the default queue) at
// now with a lease of one second and rescues it at now+1001ms with
// maxCrashes, returning what Rescue moved.
func (e *env) claimAndExpire(now int, id job.ID, maxCrashes int) []*job.Job {
	e.t.Helper()
	res := e.claim(store.ClaimParams{Now: at(now), Limit: 1, LeaseUntil: at(now + 1000)})
	if got := idsOf(res.Jobs); len(got) != 1 || got[0] != id {
		e.t.Fatalf("Claim at %d ms: got IDs %v, want [%d]", now, got, id)
	}
	return e.rescue(store.RescueParams{Now: at(now + 1001), MaxCrashes: maxCrashes})
}

// wantInterrupted fails unless j's history is n interrupted attempts.
func wantInterrupted(t *testing.T, j *job.Job, n int) {
	t.Helper()
	if len(j.Attempts) != n {
		t.Errorf("job %d: got %d attempts %s, want %d interrupted", j.ID, len(j.Attempts), fmtAttempts(j.Attempts), n)
		return
	}
	for i, a := range j.Attempts {
		if a.Outcome != job.OutcomeInterrupted || a.Attempt != i+1 {
			t.Errorf("job %d attempt %d: got #%d %q, want #%d %q", j.ID, i, a.Attempt, a.Outcome, i+1, job.OutcomeInterrupted)
		}
	}
}

func leaseCases() []testCase {
	return []testCase{
		{"HeartbeatExtendsOnlyOwnedRunningJobs", func(t *testing.T, e *env) {
			e.add(t0, &job.Job{Kind: "a", Queue: "q1"})
			e.add(t0, &job.Job{Kind: "b", Queue: "q1"})
			e.add(t0, &job.Job{Kind: "c", Queue: "q2"})
			d := e.add(t0, &job.Job{Kind: "d", Queue: "q3"})
			mine := e.claim(store.ClaimParams{Now: t0, Limit: 2, Queues: []string{"q1"}, LeaseUntil: at(30000)}).Jobs
			theirs := e.claim(store.ClaimParams{Now: t0, Limit: 1, Queues: []string{"q2"}, Worker: worker2, LeaseUntil: at(30000)}).Jobs
			done := e.inState(t0, &job.Job{Kind: "e", Queue: "q4"}, job.StateCompleted)
			a, b := mine[0], mine[1]
			before := map[job.ID]*job.Job{b.ID: e.get(b.ID), theirs[0].ID: e.get(theirs[0].ID), d: e.get(d), done.ID: done}
			ask := append(leases(a, theirs[0]), store.Lease{ID: d}, store.Lease{ID: done.ID, Claim: done.Claims},
				store.Lease{ID: done.ID + 100, Claim: 1})
			res := e.heartbeat(store.HeartbeatParams{Now: at(1000), Worker: worker1, Jobs: ask, LeaseUntil: at(60000)})
			wantIDList(t, "Heartbeat cancel", res.Cancel, nil)
			wantIDList(t, "Heartbeat lost", leaseIDs(res.Lost), []job.ID{theirs[0].ID, d, done.ID, done.ID + 100})
			wantTime(t, "LeaseUntil of the owned job", e.get(a.ID).LeaseUntil, at(60000))
			for _, j := range before {
				e.unchanged("job not extended", j)
			}
		}},
		{"HeartbeatReportsCancelRequests", func(t *testing.T, e *env) {
			e.addN(t0, 2, "k", "")
			js := e.claim(store.ClaimParams{Now: t0, Limit: 2}).Jobs
			ids := idsOf(js)
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(10), ID: ids[1]}); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			res := e.heartbeat(store.HeartbeatParams{Now: at(20), Worker: worker2, Jobs: leases(js...), LeaseUntil: at(90000)})
			wantIDList(t, "Heartbeat of another worker: cancel", res.Cancel, nil)
			wantIDList(t, "Heartbeat of another worker: lost", leaseIDs(res.Lost), ids)
			res = e.heartbeat(store.HeartbeatParams{Now: at(20), Worker: worker1, Jobs: leases(js...), LeaseUntil: at(60000)})
			wantIDList(t, "Heartbeat cancel", res.Cancel, ids[1:])
			wantIDList(t, "Heartbeat lost", leaseIDs(res.Lost), nil)
			for _, id := range ids {
				wantTime(t, "LeaseUntil", e.get(id).LeaseUntil, at(60000))
			}
		}},
		{"HeartbeatAfterLeaseLostReportsIt", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			old := store.Lease{ID: id, Claim: 1}
			e.claimAndExpire(0, id, 0)
			res := e.heartbeat(store.HeartbeatParams{Now: at(1100), Worker: worker1, Jobs: []store.Lease{old}, LeaseUntil: at(60000)})
			wantIDList(t, "Heartbeat lost after rescue", leaseIDs(res.Lost), []job.ID{id})
			e.wantState(id, job.StateAvailable)
			// Claimed again by the same worker: the old attempt is still lost.
			e.claim(store.ClaimParams{Now: at(1200), Limit: 1, LeaseUntil: at(31200)})
			res = e.heartbeat(store.HeartbeatParams{Now: at(1300), Worker: worker1, Jobs: []store.Lease{old}, LeaseUntil: at(60000)})
			if len(res.Lost) != 1 || res.Lost[0] != old {
				t.Errorf("Heartbeat of claim 1 while claim 2 runs: lost %v, want [%v]", res.Lost, old)
			}
			g := e.get(id)
			if g.Worker != worker1 || g.Attempt != 2 {
				t.Errorf("got worker %q attempt %d, want %q 2", g.Worker, g.Attempt, worker1)
			}
			wantTime(t, "LeaseUntil of the new attempt", g.LeaseUntil, at(31200))
		}},
		{"RescueOfCancelRequestedJobCancels", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			e.claim(store.ClaimParams{Now: t0, Limit: 1, LeaseUntil: at(1000)})
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(10), ID: id}); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			moved := e.rescue(store.RescueParams{Now: at(1001), MaxCrashes: 3})
			wantIDList(t, "Rescue", idsOf(moved), []job.ID{id})
			g := e.get(id)
			if g.State != job.StateCancelled || g.LastError != store.ErrorWorkerLost {
				t.Errorf("rescued cancel-requested job: state %s error %q, want cancelled %q", g.State, g.LastError, store.ErrorWorkerLost)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(1001))
			wantInterrupted(t, g, 1)
			wantIDList(t, "Claim after", e.claimIDs(at(2000), 10), nil)
		}},
		{"RescueOnlyExpiredLeases", func(t *testing.T, e *env) {
			a := e.add(t0, &job.Job{Kind: "a"})
			b := e.add(t0, &job.Job{Kind: "b"})
			e.claim(store.ClaimParams{Now: t0, Limit: 1, LeaseUntil: at(10000)})
			e.claim(store.ClaimParams{Now: t0, Limit: 1, LeaseUntil: at(20000)})
			e.inState(t0, &job.Job{Kind: "done", Queue: "other"}, job.StateCompleted)
			e.add(t0, &job.Job{Kind: "sched", Queue: "other", RunAt: at(500)})
			wantIDList(t, "Rescue before any lease expired", idsOf(e.rescue(store.RescueParams{Now: at(9999)})), nil)
			wantIDList(t, "Rescue when a lease ends now", idsOf(e.rescue(store.RescueParams{Now: at(10000)})), nil)
			bBefore := e.get(b)
			moved := e.rescue(store.RescueParams{Now: at(10001)})
			wantIDList(t, "Rescue after a lease expired", idsOf(moved), []job.ID{a})
			for what, g := range map[string]*job.Job{"returned": first(moved), "Get": e.get(a)} {
				if g == nil {
					continue
				}
				if g.State != job.StateAvailable || g.Crashes != 1 || g.Attempt != 1 || g.LastError != store.ErrorWorkerLost {
					t.Errorf("rescued job, %s: got state %s crashes %d attempt %d error %q, want available 1 1 %q",
						what, g.State, g.Crashes, g.Attempt, g.LastError, store.ErrorWorkerLost)
				}
				wantTime(t, "rescued job, "+what+" RunAt", g.RunAt, at(10001))
				wantInterrupted(t, g, 1)
			}
			e.unchanged("job with a live lease", bBefore)
			if c := e.claimExpect(at(10002), job.DefaultQueue, a); c.Attempt != 2 {
				t.Errorf("claim after rescue: got attempt %d, want 2", c.Attempt)
			}
		}},
		{"RescueEndsAttemptAtLastHeartbeat", func(t *testing.T, e *env) {
			// The interrupted attempt's duration runs from its start to the
			// last renewal of its lease, the last time its worker was known
			// to run it, not to the rescue: a worker that died 5 s into an
			// attempt is not said to have run it for the lease and the
			// rescuer's interval too.
			beat := e.add(t0, &job.Job{Kind: "k", Queue: "beat"})
			never := e.add(t0, &job.Job{Kind: "k", Queue: "never"})
			again := e.add(t0, &job.Job{Kind: "k", Queue: "again"})
			for _, q := range []string{"beat", "never", "again"} {
				e.claim(store.ClaimParams{Now: at(1000), Limit: 1, Queues: []string{q}, LeaseUntil: at(31000)})
			}
			for _, ms := range []int{11000, 21000} {
				e.heartbeat(store.HeartbeatParams{Now: at(ms), Worker: worker1, Jobs: leases(e.get(beat), e.get(again)), LeaseUntil: at(ms + 30000)})
			}
			// A renewal another worker sent, or for another claim, is not
			// the worker's: it renews nothing and does not count.
			e.heartbeat(store.HeartbeatParams{Now: at(40000), Worker: worker2, Jobs: leases(e.get(beat)), LeaseUntil: at(70000)})
			e.heartbeat(store.HeartbeatParams{Now: at(40000), Worker: worker1, Jobs: []store.Lease{{ID: beat, Claim: 2}}, LeaseUntil: at(70000)})
			wantIDList(t, "Rescue", idsOf(e.rescue(store.RescueParams{Now: at(57500)})), []job.ID{beat, never, again})
			for id, want := range map[job.ID]time.Duration{beat: 20 * time.Second, never: 0, again: 20 * time.Second} {
				g := e.get(id)
				wantInterrupted(t, g, 1)
				if len(g.Attempts) == 1 && g.Attempts[0].Duration != want {
					t.Errorf("job %d: interrupted attempt of %s, want %s (started at 1s, last heart-beat at %s)", id, g.Attempts[0].Duration, want, 1*time.Second+want)
				}
			}
			// The next attempt of a job never renewed: its duration is 0,
			// not the time since the last renewal of the first.
			e.claim(store.ClaimParams{Now: at(60000), Limit: 1, Queues: []string{"again"}, LeaseUntil: at(90000)})
			wantIDList(t, "Rescue of the second attempt", idsOf(e.rescue(store.RescueParams{Now: at(95000)})), []job.ID{again})
			if g := e.get(again); len(g.Attempts) != 2 || g.Attempts[1].Duration != 0 {
				t.Errorf("second attempt, never renewed: %s, want a duration of 0", fmtAttempts(g.Attempts))
			}
		}},
		{"EarlierClaimOfSameAttemptIsFenced", func(t *testing.T, e *env) {
			// A snoozed or released attempt does not count, so the next
			// claim runs the same attempt number: only the claim number
			// tells the two leases apart, even for the same worker.
			for _, st := range []job.State{job.StateScheduled, job.StateAvailable} {
				queue := "fence-" + st.String()
				id := e.add(t0, &job.Job{Kind: "k", Queue: queue})
				first := e.claimExpect(t0, queue, id)
				if first.Claims != 1 {
					t.Errorf("%s: first claim: Claims %d, want 1", queue, first.Claims)
				}
				ended := job.OutcomeSnoozed
				if st == job.StateAvailable {
					ended = job.OutcomeReleased
				}
				e.finishOne(at(10), first, store.Outcome{State: st, RunAt: at(20), Record: record(first, at(10), ended, "")})
				if g := e.get(id); g.Claims != 1 {
					t.Errorf("%s: after the %s outcome: Claims %d, want 1 (never lowered)", queue, st, g.Claims)
				}
				second := e.claimExpect(at(20), queue, id)
				if second.Attempt != first.Attempt || second.Claims != 2 || second.Worker != first.Worker {
					t.Fatalf("%s: second claim: attempt %d claims %d worker %q, want attempt %d claims 2 worker %q",
						queue, second.Attempt, second.Claims, second.Worker, first.Attempt, first.Worker)
				}
				before := e.get(id)
				if before.Claims != second.Claims {
					t.Errorf("%s: Get: Claims %d, want the claim's %d", queue, before.Claims, second.Claims)
				}
				res := e.heartbeat(store.HeartbeatParams{Now: at(30), Worker: worker1, Jobs: leases(first), LeaseUntil: at(90000)})
				if len(res.Lost) != 1 || res.Lost[0] != (store.Lease{ID: id, Claim: 1}) || len(res.Cancel) != 0 {
					t.Errorf("%s: Heartbeat of the first claim: %+v, want it lost", queue, res)
				}
				e.unchanged(queue+": after a Heartbeat of the first claim", before)
				late := store.Outcome{ID: id, Attempt: first.Attempt, Claim: first.Claims, State: job.StateCompleted,
					Record: record(first, at(40), "completed", ""), Output: packed("late\n", "", "", 0)}
				if ok := e.finish(at(40), late); ok[0] {
					t.Errorf("%s: Finish of the first claim while the second runs: got true, want false", queue)
				}
				e.unchanged(queue+": after a Finish of the first claim", before)
				if n := len(e.outputs(id, 0)); n != 0 {
					t.Errorf("%s: Outputs after a refused outcome: got %d, want none", queue, n)
				}
				res = e.heartbeat(store.HeartbeatParams{Now: at(50), Worker: worker1, Jobs: leases(second), LeaseUntil: at(90000)})
				if len(res.Lost) != 0 {
					t.Errorf("%s: Heartbeat of the second claim: lost %v", queue, res.Lost)
				}
				e.finishOne(at(60), second, store.Outcome{State: job.StateCompleted})
				e.wantState(id, job.StateCompleted)
			}
		}},
		{"FinishAfterRescueIsSkipped", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			e.claimAndExpire(0, id, 0)
			late := store.Outcome{ID: id, Attempt: 1, Claim: 1, State: job.StateCompleted, Record: job.Attempt{Attempt: 1, Outcome: "completed"}}
			if ok := e.finish(at(1500), late); ok[0] {
				t.Errorf("Finish of a rescued attempt: got true, want false")
			}
			e.claimExpect(at(2000), job.DefaultQueue, id)
			if ok := e.finish(at(2500), late); ok[0] {
				t.Errorf("Finish of a rescued attempt after a new claim: got true, want false")
			}
			e.wantState(id, job.StateRunning)
		}},
		{"RescueCountsConsecutiveCrashes", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			for i := range 3 {
				e.claimAndExpire(i*2000, id, 0)
			}
			e.claimAndExpire(6000, id, 5)
			g := e.get(id)
			if g.State != job.StateAvailable || g.Crashes != 4 || g.Attempt != 4 {
				t.Errorf("after 4 crashes: got state %s crashes %d attempt %d, want available 4 4", g.State, g.Crashes, g.Attempt)
			}
			wantInterrupted(t, g, 4)
		}},
		{"RescuePoisonPill", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			e.claimAndExpire(0, id, 2)
			e.wantState(id, job.StateAvailable)
			moved := e.claimAndExpire(2000, id, 2)
			wantIDList(t, "second Rescue", idsOf(moved), []job.ID{id})
			if m := first(moved); m != nil && m.State != job.StateDead {
				t.Errorf("second Rescue returned state %s, want dead", m.State)
			}
			g := e.get(id)
			if g.State != job.StateDead || g.Crashes != 2 {
				t.Errorf("poison pill: got state %s crashes %d, want dead 2", g.State, g.Crashes)
			}
			if !strings.Contains(g.LastError, strconv.Itoa(2)) {
				t.Errorf("poison pill LastError: got %q, want it to say the worker died 2 times", g.LastError)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(3001))
			wantInterrupted(t, g, 2)
			wantIDList(t, "Claim after the poison pill", e.claimIDs(at(5000), 10), nil)
		}},
		{"RescueAttemptsExhausted", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", MaxAttempts: 2})
			e.claimAndExpire(0, id, 0)
			e.wantState(id, job.StateAvailable)
			moved := e.claimAndExpire(2000, id, 0)
			wantIDList(t, "second Rescue", idsOf(moved), []job.ID{id})
			g := e.get(id)
			if g.State != job.StateDead || g.Attempt != 2 || g.LastError == "" {
				t.Errorf("exhausted job: got state %s attempt %d error %q, want dead 2 and an error", g.State, g.Attempt, g.LastError)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(3001))
			wantInterrupted(t, g, 2)
		}},
	}
}

func first(js []*job.Job) *job.Job {
	if len(js) == 0 {
		return nil
	}
	return js[0]
}
