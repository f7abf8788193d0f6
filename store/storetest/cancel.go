package storetest

import (
	"errors"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func (e *env) reschedule(p store.RescheduleParams) *job.Job {
	e.t.Helper()
	j, err := e.s.Reschedule(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Reschedule(%+v): %v", p, err)
	}
	if j == nil || j.ID != p.ID {
		e.t.Fatalf("Reschedule(%d): got job %+v", p.ID, j)
	}
	return j
}

func cancelCases() []testCase {
	return []testCase{
		{"CancelWaitingJob", func(t *testing.T, e *env) {
			for _, st := range []job.State{job.StateScheduled, job.StateAvailable, job.StateRetrying} {
				j := e.inState(t0, &job.Job{Kind: "k", Queue: st.String(), UniqueKey: "key-" + st.String()}, st)
				got, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(500), ID: j.ID})
				if err != nil {
					t.Fatalf("Cancel of a %s job: %v", st, err)
				}
				for what, g := range map[string]*job.Job{"returned": got, "Get": e.get(j.ID)} {
					if g.ID != j.ID || g.State != job.StateCancelled {
						t.Errorf("Cancel of a %s job, %s: got ID %d state %s, want %d cancelled", st, what, g.ID, g.State, j.ID)
					}
					wantTime(t, "Cancel of a "+st.String()+" job, "+what+" FinishedAt", g.FinishedAt, at(500))
				}
				wantNew(t, "Enqueue after Cancel of a "+st.String()+" job", e.enqueue(at(600), &job.Job{Kind: "k", Queue: "x", UniqueKey: "key-" + st.String()})[0])
			}
			res := e.claim(store.ClaimParams{Now: at(1 << 30), Limit: 10, Queues: []string{"scheduled", "available", "retrying"}})
			wantIDList(t, "Claim after Cancel", idsOf(res.Jobs), nil)
		}},
		{"CancelRunningJobRequestsCancellation", func(t *testing.T, e *env) {
			c := e.inState(t0, &job.Job{Kind: "k"}, job.StateRunning)
			got, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(100), ID: c.ID})
			if err != nil {
				t.Fatalf("Cancel of a running job: %v", err)
			}
			for what, g := range map[string]*job.Job{"returned": got, "Get": e.get(c.ID)} {
				if g.State != job.StateRunning || !g.CancelRequested || g.Worker != worker1 || g.Attempt != 1 {
					t.Errorf("Cancel of a running job, %s: got state %s cancel requested %v worker %q attempt %d, want running true %q 1",
						what, g.State, g.CancelRequested, g.Worker, g.Attempt, worker1)
				}
				if !g.FinishedAt.IsZero() {
					t.Errorf("Cancel of a running job, %s: got FinishedAt %v, want zero", what, g.FinishedAt)
				}
				wantTime(t, "Cancel of a running job, "+what+" LeaseUntil", g.LeaseUntil, c.LeaseUntil)
			}
			hb, err := e.s.Heartbeat(e.ctx, store.HeartbeatParams{Now: at(200), Worker: worker1, Jobs: leases(c), LeaseUntil: at(40000)})
			if err != nil {
				t.Fatalf("Heartbeat: %v", err)
			}
			wantIDList(t, "Heartbeat", hb.Cancel, []job.ID{c.ID})
		}},
		{"TerminateRunningJobRequestsKill", func(t *testing.T, e *env) {
			// A terminate is a cancel that the worker, in whichever process,
			// turns into a kill: Heartbeat lists it in Terminate too; a
			// plain cancel is not there; a claim of the job again clears
			// it.
			e.addN(t0, 3, "k", "")
			js := e.claim(store.ClaimParams{Now: t0, Limit: 3}).Jobs
			ids := idsOf(js)
			got, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(100), ID: ids[0], Terminate: true})
			if err != nil {
				t.Fatalf("Terminate of a running job: %v", err)
			}
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(100), ID: ids[1]}); err != nil {
				t.Fatalf("Cancel of a running job: %v", err)
			}
			for what, g := range map[string]*job.Job{"returned": got, "Get": e.get(ids[0])} {
				if g.State != job.StateRunning || !g.CancelRequested || !g.TerminateRequested {
					t.Errorf("Terminate of a running job, %s: state %s cancel %v terminate %v, want running true true",
						what, g.State, g.CancelRequested, g.TerminateRequested)
				}
			}
			if g := e.get(ids[1]); !g.CancelRequested || g.TerminateRequested {
				t.Errorf("Cancel of a running job: cancel %v terminate %v, want true false", g.CancelRequested, g.TerminateRequested)
			}
			// A cancel after a terminate does not soften it.
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(150), ID: ids[0]}); err != nil {
				t.Fatalf("Cancel after Terminate: %v", err)
			}
			hb, err := e.s.Heartbeat(e.ctx, store.HeartbeatParams{Now: at(200), Worker: worker1, Jobs: leases(js...), LeaseUntil: at(40000)})
			if err != nil {
				t.Fatalf("Heartbeat: %v", err)
			}
			wantIDList(t, "Heartbeat cancel", hb.Cancel, ids[:2])
			wantIDList(t, "Heartbeat terminate", hb.Terminate, ids[:1])
			// A waiting job is cancelled at once, as by Cancel.
			w := e.add(t0, &job.Job{Kind: "k", Queue: "w"})
			if g, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(300), ID: w, Terminate: true}); err != nil || g.State != job.StateCancelled || g.TerminateRequested {
				t.Errorf("Terminate of a waiting job: %+v, %v; want cancelled", g, err)
			}
			// The terminated attempt's failure ends the job cancelled.
			e.finish(at(400), store.Outcome{ID: ids[0], Attempt: 1, Claim: 1, State: job.StateRetrying, RunAt: at(400), Error: "killed",
				Record: job.Attempt{Attempt: 1, Outcome: job.StateRetrying.String()}})
			if g := e.get(ids[0]); g.State != job.StateCancelled {
				t.Errorf("the terminated attempt's failure: state %s, want cancelled", g.State)
			}
		}},
		{"CancelFinishedJobReturnsErrNotWaiting", func(t *testing.T, e *env) {
			for _, st := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
				j := e.inState(t0, &job.Job{Kind: "k", Queue: st.String()}, st)
				got, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(500), ID: j.ID})
				if !errors.Is(err, job.ErrNotWaiting) {
					t.Errorf("Cancel of a %s job: got error %v, want job.ErrNotWaiting", st, err)
				}
				if got == nil || got.ID != j.ID || got.State != st {
					t.Errorf("Cancel of a %s job: got job %+v, want it returned unchanged", st, got)
				} else {
					wantTime(t, "Cancel of a "+st.String()+" job, FinishedAt", got.FinishedAt, t0)
				}
				e.unchanged("after Cancel of a "+st.String()+" job", j)
			}
		}},
		{"CancelUnknownJobReturnsErrNotFound", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: t0, ID: id + 100}); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("Cancel of an unknown job: got %v, want job.ErrNotFound", err)
			}
		}},
		{"RescheduleLaterIsNotClaimedAtOldTime", func(t *testing.T, e *env) {
			sched := e.add(t0, &job.Job{Kind: "sched", RunAt: at(1000)})
			avail := e.add(t0, &job.Job{Kind: "avail"})
			g := e.reschedule(store.RescheduleParams{Now: at(10), ID: sched, RunAt: at(10000)})
			if g.State != job.StateScheduled {
				t.Errorf("Reschedule of a scheduled job: got state %s, want scheduled", g.State)
			}
			wantTime(t, "Reschedule RunAt", g.RunAt, at(10000))
			g = e.reschedule(store.RescheduleParams{Now: at(10), ID: avail, RunAt: at(20000)})
			if g.State != job.StateScheduled {
				t.Errorf("Reschedule of an available job later: got state %s, want scheduled", g.State)
			}
			res := e.claim(store.ClaimParams{Now: at(2000), Limit: 10})
			wantIDList(t, "Claim at the old time", idsOf(res.Jobs), nil)
			wantTime(t, "ClaimResult.NextRunAt", res.NextRunAt, at(10000))
			wantIDList(t, "Claim at the new time", e.claimIDs(at(10000), 10), []job.ID{sched})
			wantIDList(t, "Claim at the other new time", e.claimIDs(at(20000), 10), []job.ID{avail})
		}},
		{"RescheduleEarlierMakesJobAvailable", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", RunAt: at(3600000)})
			g := e.reschedule(store.RescheduleParams{Now: at(50), ID: id, RunAt: at(50)})
			if g.State != job.StateAvailable {
				t.Errorf("Reschedule to now: got state %s, want available", g.State)
			}
			wantTime(t, "RunAt", e.get(id).RunAt, at(50))
			res := e.claim(store.ClaimParams{Now: at(50), Limit: 10})
			wantIDList(t, "Claim", idsOf(res.Jobs), []job.ID{id})
			if !res.NextRunAt.IsZero() {
				t.Errorf("ClaimResult.NextRunAt: got %v, want zero (the old run-at is gone)", res.NextRunAt)
			}
		}},
		{"RescheduleRetryingJob", func(t *testing.T, e *env) {
			j := e.inState(t0, &job.Job{Kind: "k"}, job.StateRetrying)
			g := e.reschedule(store.RescheduleParams{Now: at(100), ID: j.ID, RunAt: at(100)})
			if g.State != job.StateAvailable || g.Attempt != 1 || g.LastError != "boom" {
				t.Errorf("Reschedule of a retrying job: got state %s attempt %d error %q, want available 1 boom", g.State, g.Attempt, g.LastError)
			}
			c := e.claimExpect(at(100), job.DefaultQueue, j.ID)
			if c.Attempt != 2 {
				t.Errorf("claimed: got attempt %d, want 2", c.Attempt)
			}
		}},
		{"ReschedulePriority", func(t *testing.T, e *env) {
			a := e.add(t0, &job.Job{Kind: "a"})
			b := e.add(t0, &job.Job{Kind: "b"})
			c := e.add(t0, &job.Job{Kind: "c", Priority: 5})
			g := e.reschedule(store.RescheduleParams{Now: at(1), ID: c, Priority: intp(-1)})
			if g.Priority != -1 || g.State != job.StateAvailable {
				t.Errorf("Reschedule priority: got priority %d state %s, want -1 available", g.Priority, g.State)
			}
			wantTime(t, "RunAt after a priority-only Reschedule", g.RunAt, t0)
			e.reschedule(store.RescheduleParams{Now: at(1), ID: a, Priority: intp(10)})
			var got []job.ID
			for range 3 {
				got = append(got, e.claimIDs(at(2), 1)...)
			}
			wantIDList(t, "Claim one at a time", got, []job.ID{c, b, a})
		}},
		{"RescheduleRunAtKeepsPriority", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", Priority: -4, RunAt: at(1000)})
			g := e.reschedule(store.RescheduleParams{Now: at(1), ID: id, RunAt: at(2000)})
			if g.Priority != -4 {
				t.Errorf("Reschedule run-at: got priority %d, want -4", g.Priority)
			}
			g = e.reschedule(store.RescheduleParams{Now: at(2), ID: id, RunAt: at(3000), Priority: intp(0)})
			if g.Priority != 0 || g.State != job.StateScheduled {
				t.Errorf("Reschedule both: got priority %d state %s, want 0 scheduled", g.Priority, g.State)
			}
			wantTime(t, "RunAt", g.RunAt, at(3000))
		}},
		{"RescheduleNonWaitingJobReturnsErrNotWaiting", func(t *testing.T, e *env) {
			for _, st := range []job.State{job.StateRunning, job.StateCompleted, job.StateCancelled, job.StateDead} {
				j := e.inState(t0, &job.Job{Kind: "k", Queue: st.String()}, st)
				_, err := e.s.Reschedule(e.ctx, store.RescheduleParams{Now: at(1), ID: j.ID, RunAt: at(5000), Priority: intp(-9)})
				if !errors.Is(err, job.ErrNotWaiting) {
					t.Errorf("Reschedule of a %s job: got %v, want job.ErrNotWaiting", st, err)
				}
				e.unchanged("after Reschedule of a "+st.String()+" job", j)
			}
			if _, err := e.s.Reschedule(e.ctx, store.RescheduleParams{Now: at(1), ID: 1 << 40, RunAt: at(5000)}); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("Reschedule of an unknown job: got %v, want job.ErrNotFound", err)
			}
		}},
	}
}
