package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// crashedThenRunning enqueues a job at t0, lets a worker crash under it once
// (so Crashes is 1), and claims it again at t0+2s: attempt 2, lease 30s.
func (e *env) crashedThenRunning() *job.Job {
	e.t.Helper()
	id := e.add(t0, &job.Job{Kind: "k"})
	if c := e.crash(t0, job.DefaultQueue, id); c.Crashes != 1 {
		e.t.Fatalf("after a crash: got crashes %d, want 1", c.Crashes)
	}
	return e.claimExpect(at(2000), job.DefaultQueue, id)
}

// wantNoLease fails unless j has no worker and no lease.
func wantNoLease(t *testing.T, what string, j *job.Job) {
	t.Helper()
	if j.Worker != "" || !j.LeaseUntil.IsZero() {
		t.Errorf("%s: got worker %q lease until %v, want both cleared", what, j.Worker, j.LeaseUntil)
	}
}

// wantLastAttempt fails unless j's history has n entries, the last one rec.
func wantLastAttempt(t *testing.T, what string, j *job.Job, n int, rec job.Attempt) {
	t.Helper()
	if len(j.Attempts) != n {
		t.Errorf("%s: got %d attempts %s, want %d", what, len(j.Attempts), fmtAttempts(j.Attempts), n)
		return
	}
	wantAttempts(t, what, j.Attempts[n-1:], []job.Attempt{rec})
}

func finishCases() []testCase {
	return []testCase{
		{"FinishCompleted", func(t *testing.T, e *env) {
			c := e.crashedThenRunning()
			rec := record(c, at(2500), "completed", "")
			e.finishOne(at(2500), c, store.Outcome{State: job.StateCompleted, Result: json.RawMessage(`{"sum":3}`), Record: rec})
			g := e.get(c.ID)
			if g.State != job.StateCompleted || g.Crashes != 0 || g.Attempt != 2 {
				t.Errorf("completed job: got state %s crashes %d attempt %d, want completed 0 2", g.State, g.Crashes, g.Attempt)
			}
			if !jsonEqual(g.Result, []byte(`{"sum":3}`)) {
				t.Errorf("Result: got %s, want {\"sum\":3}", g.Result)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(2500))
			wantNoLease(t, "completed job", g)
			wantLastAttempt(t, "completed job", g, 2, rec)
		}},
		{"FinishRetrying", func(t *testing.T, e *env) {
			c := e.crashedThenRunning()
			rec := record(c, at(2500), "retrying", "e1")
			rec.Backoff = 6500 * time.Millisecond
			e.finishOne(at(2500), c, store.Outcome{State: job.StateRetrying, RunAt: at(9000), Error: "e1", Record: rec})
			g := e.get(c.ID)
			if g.State != job.StateRetrying || g.LastError != "e1" || g.Crashes != 0 || g.Attempt != 2 {
				t.Errorf("retrying job: got state %s error %q crashes %d attempt %d, want retrying e1 0 2", g.State, g.LastError, g.Crashes, g.Attempt)
			}
			wantTime(t, "RunAt", g.RunAt, at(9000))
			if !g.FinishedAt.IsZero() {
				t.Errorf("FinishedAt: got %v, want zero", g.FinishedAt)
			}
			wantNoLease(t, "retrying job", g)
			wantLastAttempt(t, "retrying job", g, 2, rec)
		}},
		{"FinishDead", func(t *testing.T, e *env) {
			c := e.crashedThenRunning()
			rec := record(c, at(2500), "dead", "bad input")
			e.finishOne(at(2500), c, store.Outcome{State: job.StateDead, Error: "bad input", Record: rec})
			g := e.get(c.ID)
			if g.State != job.StateDead || g.LastError != "bad input" || g.Crashes != 0 {
				t.Errorf("dead job: got state %s error %q crashes %d, want dead \"bad input\" 0", g.State, g.LastError, g.Crashes)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(2500))
			wantNoLease(t, "dead job", g)
			wantLastAttempt(t, "dead job", g, 2, rec)
		}},
		{"FinishCancelled", func(t *testing.T, e *env) {
			c := e.inState(t0, &job.Job{Kind: "k"}, job.StateRunning)
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(100), ID: c.ID}); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			rec := record(c, at(200), "cancelled", "context canceled")
			e.finishOne(at(200), c, store.Outcome{State: job.StateCancelled, Error: "context canceled", Record: rec})
			g := e.get(c.ID)
			if g.State != job.StateCancelled || g.LastError != "context canceled" {
				t.Errorf("cancelled job: got state %s error %q, want cancelled \"context canceled\"", g.State, g.LastError)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(200))
			wantNoLease(t, "cancelled job", g)
			wantLastAttempt(t, "cancelled job", g, 1, rec)
		}},
		{"FinishCancelledWithoutErrorKeepsLastError", func(t *testing.T, e *env) {
			c := e.inState(t0, &job.Job{Kind: "k"}, job.StateRunning)
			e.finishOne(t0, c, store.Outcome{State: job.StateRetrying, RunAt: at(1000), Error: "boom"})
			c = e.claimExpect(at(1000), job.DefaultQueue, c.ID)
			e.finishOne(at(1500), c, store.Outcome{State: job.StateCancelled})
			g := e.get(c.ID)
			if g.State != job.StateCancelled || g.LastError != "boom" {
				t.Errorf("cancelled job: got state %s error %q, want cancelled boom", g.State, g.LastError)
			}
			wantTime(t, "FinishedAt", g.FinishedAt, at(1500))
		}},
		{"FinishSnoozedRestoresAttemptAndWaits", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", MaxAttempts: 1})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			rec := record(c, at(100), job.OutcomeSnoozed, "snoozed for 5s")
			e.finishOne(at(100), c, store.Outcome{State: job.StateScheduled, RunAt: at(5100), Record: rec})
			g := e.get(id)
			if g.State != job.StateScheduled || g.Attempt != 0 || !g.RunAt.Equal(at(5100)) || g.Crashes != 0 || g.LastError != "" || !g.FinishedAt.IsZero() {
				t.Errorf("snoozed job: got state %s attempt %d run-at %v crashes %d last error %q finished %v, want scheduled 0 %v 0 \"\" zero",
					g.State, g.Attempt, g.RunAt, g.Crashes, g.LastError, g.FinishedAt, at(5100))
			}
			wantNoLease(t, "snoozed job", g)
			wantLastAttempt(t, "snoozed job", g, 1, rec)
			if ids := e.claimIDs(at(5099), 10); len(ids) != 0 {
				t.Errorf("claim before the snooze ends: got %v, want none", ids)
			}
			// Its only attempt was not used up: it runs again, attempt 1 of 1.
			again := e.claimExpect(at(5100), job.DefaultQueue, id)
			if again.Attempt != 1 {
				t.Errorf("claim after the snooze: attempt %d, want 1", again.Attempt)
			}
			// A snooze of a job whose cancel was requested cancels it.
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(5200), ID: id}); err != nil {
				t.Fatal(err)
			}
			reached := e.finish(at(5300), store.Outcome{ID: id, Attempt: again.Attempt, Claim: again.Claims, State: job.StateScheduled, RunAt: at(9000),
				Record: record(again, at(5300), job.OutcomeSnoozed, "snoozed for 3.7s")})
			if !reached[0] || e.state(id) != job.StateCancelled {
				t.Errorf("snooze after a cancel request: got %s, want cancelled", e.state(id))
			}
		}},
		{"FinishReleasedRestoresAttempt", func(t *testing.T, e *env) {
			c := e.crashedThenRunning() // attempt 2, crashes 1, run-at t0+1.001s
			rec := record(c, at(2500), job.OutcomeReleased, "")
			e.finishOne(at(2500), c, store.Outcome{State: job.StateAvailable, Record: rec})
			g := e.get(c.ID)
			if g.State != job.StateAvailable || g.Attempt != 1 || g.Crashes != 1 {
				t.Errorf("released job: got state %s attempt %d crashes %d, want available 1 1", g.State, g.Attempt, g.Crashes)
			}
			wantTime(t, "RunAt", g.RunAt, c.RunAt)
			if !g.FinishedAt.IsZero() {
				t.Errorf("FinishedAt: got %v, want zero", g.FinishedAt)
			}
			wantNoLease(t, "released job", g)
			wantLastAttempt(t, "released job", g, 2, rec)
			if again := e.claimExpect(at(3000), job.DefaultQueue, c.ID); again.Attempt != 2 {
				t.Errorf("claim after release: got attempt %d, want 2", again.Attempt)
			}
		}},
		{"FinishWithWrongAttemptIsSkipped", func(t *testing.T, e *env) {
			c := e.inState(t0, &job.Job{Kind: "k"}, job.StateRunning)
			before := e.get(c.ID)
			for _, attempt := range []int{0, 2} {
				ok := e.finish(at(100), store.Outcome{ID: c.ID, Attempt: attempt, Claim: c.Claims, State: job.StateCompleted,
					Record: job.Attempt{Attempt: attempt, Outcome: "completed"}})
				if ok[0] {
					t.Errorf("Finish with attempt %d of a job running attempt 1: got true, want false", attempt)
				}
			}
			e.unchanged("after Finish with a wrong attempt", before)
		}},
		{"FinishOfJobNotRunningIsSkipped", func(t *testing.T, e *env) {
			avail := e.inState(t0, &job.Job{Kind: "k", Queue: "a"}, job.StateAvailable)
			done := e.inState(t0, &job.Job{Kind: "k", Queue: "b"}, job.StateCompleted)
			retry := e.inState(t0, &job.Job{Kind: "k", Queue: "c"}, job.StateRetrying)
			sched := e.inState(t0, &job.Job{Kind: "k", Queue: "d"}, job.StateScheduled)
			for _, j := range []*job.Job{avail, done, retry, sched} {
				for _, st := range []job.State{job.StateCompleted, job.StateDead, job.StateAvailable} {
					ok := e.finish(at(100), store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: st, Error: "x",
						Record: job.Attempt{Attempt: j.Attempt, Outcome: st.String()}})
					if ok[0] {
						t.Errorf("Finish(-> %s) of a %s job: got true, want false", st, j.State)
					}
				}
				e.unchanged("after Finish of a "+j.State.String()+" job", j)
			}
			ok := e.finish(at(100), store.Outcome{ID: done.ID + 1000, Attempt: 1, Claim: 1, State: job.StateCompleted})
			if ok[0] {
				t.Errorf("Finish of an unknown job: got true, want false")
			}
		}},
		{"FinishSameJobTwiceInOneCall", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			c := e.claimExpect(t0, job.DefaultQueue, id)
			first := store.Outcome{ID: id, Attempt: c.Attempt, Claim: c.Claims, State: job.StateCompleted, Record: record(c, at(10), "completed", "")}
			second := store.Outcome{ID: id, Attempt: c.Attempt, Claim: c.Claims, State: job.StateDead, Error: "late", Record: record(c, at(10), "dead", "late")}
			if got := e.finish(at(10), first, second); !got[0] || got[1] {
				t.Errorf("Finish(completed, dead) of one job: applied %v, want [true false]", got)
			}
			g := e.get(id)
			if g.State != job.StateCompleted || g.LastError != "" || len(g.Attempts) != 1 {
				t.Errorf("job: state %s error %q attempts %d, want completed, no error, 1 attempt", g.State, g.LastError, len(g.Attempts))
			}
		}},
		{"FinishTwiceAppliesOnce", func(t *testing.T, e *env) {
			c := e.inState(t0, &job.Job{Kind: "k"}, job.StateRunning)
			e.finishOne(at(100), c, store.Outcome{State: job.StateCompleted})
			before := e.get(c.ID)
			ok := e.finish(at(200), store.Outcome{ID: c.ID, Attempt: c.Attempt, Claim: c.Claims, State: job.StateDead, Error: "late", Record: record(c, at(200), "dead", "late")})
			if ok[0] {
				t.Errorf("second Finish of the same attempt: got true, want false")
			}
			e.unchanged("after a second Finish", before)
		}},
		{"FinishBatchReportsEachOutcome", func(t *testing.T, e *env) {
			ids := e.addN(t0, 3, "k", "")
			cl := e.claim(store.ClaimParams{Now: t0, Limit: 3}).Jobs
			if got := sortedIDs(cl); len(got) != 3 {
				t.Fatalf("Claim: got IDs %v, want %v", got, ids)
			}
			byID := map[job.ID]*job.Job{}
			for _, j := range cl {
				byID[j.ID] = j
			}
			outs := []store.Outcome{
				{ID: ids[0], Attempt: 1, Claim: 1, State: job.StateCompleted, Record: record(byID[ids[0]], at(10), "completed", "")},
				{ID: ids[1], Attempt: 7, Claim: 1, State: job.StateCompleted, Record: record(byID[ids[1]], at(10), "completed", "")},
				{ID: ids[2], Attempt: 1, Claim: 1, State: job.StateDead, Error: "x", Record: record(byID[ids[2]], at(10), "dead", "x")},
			}
			ok := e.finish(at(10), outs...)
			if !ok[0] || ok[1] || !ok[2] {
				t.Errorf("Finish: got %v, want [true false true]", ok)
			}
			e.wantState(ids[0], job.StateCompleted)
			e.wantState(ids[1], job.StateRunning)
			e.wantState(ids[2], job.StateDead)
		}},
		{"FinishToIllegalStateIsTransitionError", func(t *testing.T, e *env) {
			ids := e.addN(t0, 2, "k", "")
			cl := e.claim(store.ClaimParams{Now: t0, Limit: 2}).Jobs
			if len(cl) != 2 {
				t.Fatalf("Claim: got IDs %v, want %v", idsOf(cl), ids)
			}
			a, b := e.get(ids[0]), e.get(ids[1])
			for _, st := range []job.State{job.StateRunning} { // running -> scheduled is a snooze
				_, err := e.s.Finish(e.ctx, store.FinishParams{Now: at(10), Outcomes: []store.Outcome{
					{ID: a.ID, Attempt: 1, Claim: 1, State: job.StateCompleted, Record: record(a, at(10), "completed", "")},
					{ID: b.ID, Attempt: 1, Claim: 1, State: st, RunAt: at(5000), Record: record(b, at(10), st.String(), "")},
				}})
				var te *job.TransitionError
				if !errors.As(err, &te) {
					t.Errorf("Finish(-> %s): got error %v, want a *job.TransitionError", st, err)
				} else if te.ID != b.ID || te.From != job.StateRunning || te.To != st {
					t.Errorf("Finish(-> %s): got %+v, want ID %d from running to %s", st, te, b.ID, st)
				}
				e.unchanged("after Finish(-> "+st.String()+") (the target)", b)
				e.unchanged("after Finish(-> "+st.String()+") (the other job of the call)", a)
			}
		}},
		{"FinishAccumulatesAttemptHistory", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			var want []job.Attempt
			now := t0
			for i, st := range []job.State{job.StateRetrying, job.StateRetrying, job.StateCompleted} {
				c := e.claimExpect(now, job.DefaultQueue, id)
				end := now.Add(time.Duration(100*(i+1)) * time.Millisecond)
				rec := record(c, end, st.String(), "")
				o := store.Outcome{State: st, Record: rec}
				if st == job.StateRetrying {
					o.Error = "fail " + string(rune('1'+i))
					rec.Error = o.Error
					rec.Backoff = time.Second
					o.Record, o.RunAt = rec, end.Add(time.Second)
				}
				e.finishOne(end, c, o)
				want = append(want, rec)
				now = end.Add(time.Second)
			}
			g := e.get(id)
			if g.Attempt != 3 {
				t.Errorf("Attempt: got %d, want 3", g.Attempt)
			}
			wantAttempts(t, "history", g.Attempts, want)
		}},
	}
}
