package storetest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func (e *env) heartbeat(p store.HeartbeatParams) []job.ID {
	e.t.Helper()
	ids, err := e.s.Heartbeat(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Heartbeat(%+v): %v", p, err)
	}
	return ids
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
			a := e.add(t0, &job.Job{Kind: "a", Queue: "q1"})
			b := e.add(t0, &job.Job{Kind: "b", Queue: "q1"})
			c := e.add(t0, &job.Job{Kind: "c", Queue: "q2"})
			d := e.add(t0, &job.Job{Kind: "d", Queue: "q3"})
			e.claim(store.ClaimParams{Now: t0, Limit: 2, Queues: []string{"q1"}, LeaseUntil: at(30000)})
			e.claim(store.ClaimParams{Now: t0, Limit: 1, Queues: []string{"q2"}, Worker: worker2, LeaseUntil: at(30000)})
			done := e.inState(t0, &job.Job{Kind: "e", Queue: "q4"}, job.StateCompleted)
			before := map[job.ID]*job.Job{b: e.get(b), c: e.get(c), d: e.get(d), done.ID: done}
			ids := e.heartbeat(store.HeartbeatParams{Now: at(1000), Worker: worker1, IDs: []job.ID{a, c, d, done.ID, done.ID + 100}, LeaseUntil: at(60000)})
			wantIDList(t, "Heartbeat", ids, nil)
			wantTime(t, "LeaseUntil of the owned job", e.get(a).LeaseUntil, at(60000))
			for _, j := range before {
				e.unchanged("job not extended", j)
			}
		}},
		{"HeartbeatReportsCancelRequests", func(t *testing.T, e *env) {
			ids := e.addN(t0, 2, "k", "")
			e.claim(store.ClaimParams{Now: t0, Limit: 2})
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(10), ID: ids[1]}); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			got := e.heartbeat(store.HeartbeatParams{Now: at(20), Worker: worker2, IDs: ids, LeaseUntil: at(90000)})
			wantIDList(t, "Heartbeat of another worker", got, nil)
			got = e.heartbeat(store.HeartbeatParams{Now: at(20), Worker: worker1, IDs: ids, LeaseUntil: at(60000)})
			wantIDList(t, "Heartbeat", got, ids[1:])
			for _, id := range ids {
				wantTime(t, "LeaseUntil", e.get(id).LeaseUntil, at(60000))
			}
		}},
		{"HeartbeatAfterLeaseLostIsIgnored", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			e.claimAndExpire(0, id, 0)
			e.heartbeat(store.HeartbeatParams{Now: at(1100), Worker: worker1, IDs: []job.ID{id}, LeaseUntil: at(60000)})
			e.wantState(id, job.StateAvailable)
			e.claim(store.ClaimParams{Now: at(1200), Limit: 1, Worker: worker2, LeaseUntil: at(31200)})
			e.heartbeat(store.HeartbeatParams{Now: at(1300), Worker: worker1, IDs: []job.ID{id}, LeaseUntil: at(60000)})
			g := e.get(id)
			if g.Worker != worker2 {
				t.Errorf("Worker: got %q, want %q", g.Worker, worker2)
			}
			wantTime(t, "LeaseUntil of the new owner", g.LeaseUntil, at(31200))
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
				if g.State != job.StateAvailable || g.Crashes != 1 || g.Attempt != 1 {
					t.Errorf("rescued job, %s: got state %s crashes %d attempt %d, want available 1 1", what, g.State, g.Crashes, g.Attempt)
				}
				wantTime(t, "rescued job, "+what+" RunAt", g.RunAt, at(10001))
				wantInterrupted(t, g, 1)
			}
			e.unchanged("job with a live lease", bBefore)
			if c := e.claimExpect(at(10002), job.DefaultQueue, a); c.Attempt != 2 {
				t.Errorf("claim after rescue: got attempt %d, want 2", c.Attempt)
			}
		}},
		{"FinishAfterRescueIsSkipped", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			e.claimAndExpire(0, id, 0)
			late := store.Outcome{ID: id, Attempt: 1, State: job.StateCompleted, Record: job.Attempt{Attempt: 1, Outcome: "completed"}}
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
