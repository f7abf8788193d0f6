package storetest

import (
	"errors"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func (e *env) retryDead(p store.RetryDeadParams, want int) {
	e.t.Helper()
	n, err := e.s.RetryDead(e.ctx, p)
	if err != nil {
		e.t.Fatalf("RetryDead(%+v): %v", p, err)
	}
	if n != want {
		e.t.Errorf("RetryDead(%+v): got %d, want %d", p, n, want)
	}
}

func (e *env) purge(p store.PurgeParams, want int) {
	e.t.Helper()
	n, err := e.s.Purge(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Purge(%+v): %v", p, err)
	}
	if n != want {
		e.t.Errorf("Purge(%+v): got %d, want %d", p, n, want)
	}
}

// finishedAt makes a job of kind in state st (completed, cancelled or dead)
// finished at t0+ms, in its own queue.
func (e *env) finishedAt(ms int, kind string, st job.State) job.ID {
	e.t.Helper()
	return e.inState(at(ms), &job.Job{Kind: kind, Queue: kind}, st).ID
}

var finishedStates = []job.State{job.StateCompleted, job.StateCancelled, job.StateDead}

func dlqCases() []testCase {
	return []testCase{
		{"RetryDeadAll", func(t *testing.T, e *env) {
			pill := e.add(t0, &job.Job{Kind: "pill"})
			e.claimAndExpire(0, pill, 1)
			failed := e.inState(at(2000), &job.Job{Kind: "failed"}, job.StateDead)
			done := e.inState(at(2000), &job.Job{Kind: "done"}, job.StateCompleted)
			before := map[job.ID]*job.Job{pill: e.get(pill), failed.ID: failed}
			if before[pill].State != job.StateDead || before[pill].Crashes != 1 {
				t.Fatalf("poison pill: got state %s crashes %d, want dead 1", before[pill].State, before[pill].Crashes)
			}
			e.retryDead(store.RetryDeadParams{Now: at(5000), All: true}, 2)
			for id, b := range before {
				g := e.get(id)
				if g.State != job.StateAvailable || g.Attempt != 0 || g.Crashes != 0 || g.LastError != b.LastError || g.LastError == "" {
					t.Errorf("retried job %d: got state %s attempt %d crashes %d error %q, want available 0 0 %q",
						id, g.State, g.Attempt, g.Crashes, g.LastError, b.LastError)
				}
				wantTime(t, "retried job RunAt", g.RunAt, at(5000))
				if !g.FinishedAt.IsZero() {
					t.Errorf("retried job %d: got FinishedAt %v, want zero", id, g.FinishedAt)
				}
				wantAttempts(t, "retried job history", g.Attempts, b.Attempts)
			}
			e.unchanged("completed job", done)
			cl := e.claim(store.ClaimParams{Now: at(5000), Limit: 10}).Jobs
			wantIDList(t, "Claim after RetryDead", sortedIDs(cl), []job.ID{pill, failed.ID})
			for _, j := range cl {
				if j.Attempt != 1 {
					t.Errorf("claimed job %d: got attempt %d, want 1", j.ID, j.Attempt)
				}
			}
			e.retryDead(store.RetryDeadParams{Now: at(6000), All: true}, 0)
		}},
		{"RetryDeadByIDs", func(t *testing.T, e *env) {
			a := e.finishedAt(0, "a", job.StateDead)
			b := e.inState(t0, &job.Job{Kind: "b", Queue: "b"}, job.StateDead)
			c := e.finishedAt(0, "c", job.StateDead)
			e.retryDead(store.RetryDeadParams{Now: at(100), IDs: []job.ID{a, c}}, 2)
			e.wantState(a, job.StateAvailable)
			e.wantState(c, job.StateAvailable)
			e.unchanged("dead job not named", b)
		}},
		{"PurgeByState", func(t *testing.T, e *env) {
			c1 := e.finishedAt(0, "c1", job.StateCompleted)
			c2 := e.finishedAt(0, "c2", job.StateCompleted)
			x := e.finishedAt(0, "x", job.StateCancelled)
			d := e.finishedAt(0, "d", job.StateDead)
			avail := e.add(t0, &job.Job{Kind: "avail", RunAt: at(-1000)})
			run := e.inState(t0, &job.Job{Kind: "run", Queue: "run"}, job.StateRunning).ID
			retry := e.inState(t0, &job.Job{Kind: "retry", Queue: "retry"}, job.StateRetrying).ID
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, All: true}, 2)
			e.gone(c1)
			e.gone(c2)
			e.wantIDs("after Purge of completed jobs", x, d, avail, run, retry)
			e.purge(store.PurgeParams{States: finishedStates, All: true}, 2)
			e.wantIDs("after Purge of every finished state", avail, run, retry)
			e.purge(store.PurgeParams{States: finishedStates, All: true}, 0)
		}},
		{"PurgeBefore", func(t *testing.T, e *env) {
			e.finishedAt(1000, "a", job.StateCompleted)
			b := e.finishedAt(2000, "b", job.StateCompleted)
			c := e.finishedAt(3000, "c", job.StateCompleted)
			d := e.finishedAt(1000, "d", job.StateDead)
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, Before: at(2000)}, 1)
			e.wantIDs("after Purge before t0+2s", b, c, d)
			e.purge(store.PurgeParams{States: finishedStates, Before: at(3000)}, 2)
			e.wantIDs("after Purge before t0+3s", c)
		}},
		{"PurgeByIDs", func(t *testing.T, e *env) {
			c1 := e.finishedAt(0, "c1", job.StateCompleted)
			c2 := e.finishedAt(0, "c2", job.StateCompleted)
			c3 := e.finishedAt(0, "c3", job.StateCompleted)
			d := e.finishedAt(0, "d", job.StateDead)
			avail := e.add(t0, &job.Job{Kind: "avail"})
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, IDs: []job.ID{c1, c3, d, avail}}, 2)
			e.wantIDs("after Purge by IDs", c2, d, avail)
		}},
		{"PurgeKeepNewest", func(t *testing.T, e *env) {
			var c, d []job.ID
			for i := range 4 {
				c = append(c, e.finishedAt(1000*(i+1), "c", job.StateCompleted))
			}
			for i := range 3 {
				d = append(d, e.finishedAt(1000*(i+1), "d", job.StateDead))
			}
			x := e.finishedAt(500, "x", job.StateCancelled)
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted, job.StateDead}, KeepNewest: 2}, 3)
			e.wantIDs("after Purge keeping the newest 2", c[2], c[3], d[1], d[2], x)
		}},
		{"PurgeKeepNewestAmongMatchingJobs", func(t *testing.T, e *env) {
			var c []job.ID
			for i := range 4 {
				c = append(c, e.finishedAt(1000*(i+1), "c", job.StateCompleted))
			}
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, Before: at(3500), KeepNewest: 1}, 2)
			e.wantIDs("after Purge before t0+3.5s keeping 1", c[2], c[3])
		}},
		{"PurgeKeepNewestBreaksTiesByID", func(t *testing.T, e *env) {
			e.finishedAt(1000, "a", job.StateCompleted)
			b := e.finishedAt(1000, "b", job.StateCompleted)
			c := e.finishedAt(1000, "c", job.StateCompleted)
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, KeepNewest: 2}, 1)
			e.wantIDs("after Purge keeping the newest 2 of a tie", b, c)
		}},
		{"PurgeOfUnfinishedStateIsFieldError", func(t *testing.T, e *env) {
			done := e.finishedAt(0, "done", job.StateCompleted)
			avail := e.add(t0, &job.Job{Kind: "avail"})
			for _, states := range [][]job.State{
				{job.StateAvailable},
				{job.StateCompleted, job.StateRunning},
				{job.StateScheduled}, {job.StateRetrying},
			} {
				n, err := e.s.Purge(e.ctx, store.PurgeParams{States: states, All: true})
				var fe *job.FieldError
				if !errors.As(err, &fe) || fe.Field != "states" {
					t.Errorf("Purge(%v): got %d, %v, want a *job.FieldError on states", states, n, err)
				}
			}
			e.wantIDs("after the rejected Purges", done, avail)
		}},
	}
}
