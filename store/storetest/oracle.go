package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// The oracle cases drive a store through a transition and compare every
// field of the result with what the transition functions of package store
// (ApplyFinish, ApplyRescue, ApplyCancel, ...) make of the job as it was
// before. They catch a backend whose SQL says something else.

// wantJob fails unless got equals want in every field (as their JSON, which
// carries every stored field; times are UTC on both sides).
func (e *env) wantJob(what string, got, want *job.Job) {
	e.t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		e.t.Errorf("%s: job %d\n got %s\nwant %s", what, want.ID, g, w)
	}
}

// expect returns what apply makes of the stored job id.
func (e *env) expect(id job.ID, apply func(j *job.Job) error) *job.Job {
	e.t.Helper()
	j := e.get(id).Clone()
	if err := apply(j); err != nil {
		e.t.Fatalf("oracle for job %d: %v", id, err)
	}
	return j
}

func oracleCases() []testCase {
	return []testCase{
		{"OracleFinish", func(t *testing.T, e *env) {
			// Every target state, with and without a requested cancel, after
			// an earlier failed attempt; all outcomes in one Finish call.
			type tc struct {
				name   string
				cancel bool
				o      store.Outcome
				id     job.ID
				want   *job.Job
			}
			var cases []*tc
			for _, cancel := range []bool{false, true} {
				for _, o := range []store.Outcome{
					{State: job.StateCompleted, Result: json.RawMessage(`{"ok":true}`)},
					{State: job.StateRetrying, RunAt: at(90000), Error: "e2"},
					{State: job.StateDead, Error: "fatal"},
					{State: job.StateCancelled, Error: "stopped"},
					{State: job.StateAvailable},
					{State: job.StateScheduled, RunAt: at(60000)}, // snoozed
				} {
					cases = append(cases, &tc{name: fmt.Sprintf("%s cancel=%v", o.State, cancel), cancel: cancel, o: o})
				}
			}
			for _, c := range cases {
				c.id = e.add(t0, &job.Job{Kind: "k", Queue: "oracle-" + c.name})
				first := e.claimExpect(t0, "oracle-"+c.name, c.id)
				rec := record(first, at(100), "retrying", "e1")
				rec.Result = json.RawMessage(`{"exit_code":3}`)
				e.finishOne(at(100), first, store.Outcome{State: job.StateRetrying, RunAt: at(200), Error: "e1", Record: rec})
				second := e.claimExpect(at(300), "oracle-"+c.name, c.id)
				if c.cancel {
					if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(400), ID: c.id}); err != nil {
						t.Fatalf("Cancel: %v", err)
					}
				}
				c.o.ID, c.o.Attempt, c.o.Claim = second.ID, second.Attempt, second.Claims
				c.o.Record = record(second, at(500), c.o.State.String(), c.o.Error)
				c.want = e.expect(c.id, func(j *job.Job) error {
					ok, err := store.ApplyFinish(j, c.o, at(500))
					if !ok && err == nil {
						err = fmt.Errorf("did not apply")
					}
					return err
				})
			}
			outs := make([]store.Outcome, len(cases))
			for i, c := range cases {
				outs[i] = c.o
			}
			for i, ok := range e.finish(at(500), outs...) {
				if !ok {
					t.Errorf("%s: not applied", cases[i].name)
				}
			}
			for _, c := range cases {
				g := e.get(c.id)
				e.wantJob("Finish "+c.name, g, c.want)
				// The rules themselves, not only the oracle's word for them:
				// a requested cancel wins over any outcome but success, and
				// a completed job carries no error.
				want := c.o.State
				if c.cancel && want != job.StateCompleted {
					want = job.StateCancelled
				}
				if g.State != want {
					t.Errorf("Finish %s: got state %s, want %s", c.name, g.State, want)
				}
				if g.State == job.StateCompleted && g.LastError != "" {
					t.Errorf("Finish %s: completed job keeps LastError %q", c.name, g.LastError)
				}
			}
		}},
		{"OracleFinishFirstAttempt", func(t *testing.T, e *env) {
			// A first attempt ending every way, in one Finish call: a store
			// may keep a first record, or a plain success, in a form of its
			// own, but must give back exactly what the rules say.
			type tc struct {
				name string
				o    store.Outcome
				edit func(r *job.Attempt)
				id   job.ID
				want *job.Job
			}
			cases := []*tc{
				{name: "plain success", o: store.Outcome{State: job.StateCompleted}},
				{name: "success with result", o: store.Outcome{State: job.StateCompleted, Result: json.RawMessage(`[1]`)}},
				{name: "success with an attempt result", o: store.Outcome{State: job.StateCompleted},
					edit: func(r *job.Attempt) { r.Result = json.RawMessage(`{"out":"x"}`) }},
				{name: "success recorded by another worker", o: store.Outcome{State: job.StateCompleted},
					edit: func(r *job.Attempt) { r.Worker = "other" }},
				{name: "success started earlier", o: store.Outcome{State: job.StateCompleted},
					edit: func(r *job.Attempt) { r.StartedAt = r.StartedAt.Add(-time.Second) }},
				{name: "retrying", o: store.Outcome{State: job.StateRetrying, RunAt: at(900), Error: "e"},
					edit: func(r *job.Attempt) { r.Backoff = 400 * time.Millisecond }},
				{name: "dead", o: store.Outcome{State: job.StateDead, Error: "fatal"}},
				{name: "cancelled", o: store.Outcome{State: job.StateCancelled, Error: "stop"}},
				{name: "released", o: store.Outcome{State: job.StateAvailable}},
				{name: "snoozed", o: store.Outcome{State: job.StateScheduled, RunAt: at(5000)}},
				{name: "plain success again", o: store.Outcome{State: job.StateCompleted}},
			}
			outs := make([]store.Outcome, len(cases))
			for i, c := range cases {
				q := "first-" + c.name
				c.id = e.add(t0, &job.Job{Kind: "k", Queue: q})
				j := e.claimExpect(at(10), q, c.id)
				c.o.ID, c.o.Attempt, c.o.Claim = j.ID, j.Attempt, j.Claims
				c.o.Record = record(j, at(500), c.o.State.String(), c.o.Error)
				switch c.o.State {
				case job.StateAvailable:
					c.o.Record.Outcome = job.OutcomeReleased
				case job.StateScheduled:
					c.o.Record.Outcome, c.o.Record.Error = job.OutcomeSnoozed, "snoozed for 4.5s"
				}
				if c.edit != nil {
					c.edit(&c.o.Record)
				}
				c.want = e.expect(c.id, func(j *job.Job) error {
					_, err := store.ApplyFinish(j, c.o, at(500))
					return err
				})
				outs[i] = c.o
			}
			for i, ok := range e.finish(at(500), outs...) {
				if !ok {
					t.Errorf("%s: not applied", cases[i].name)
				}
			}
			for _, c := range cases {
				e.wantJob("Finish "+c.name, e.get(c.id), c.want)
			}
		}},
		{"OracleRescue", func(t *testing.T, e *env) {
			const maxCrashes = 2
			plain := e.add(t0, &job.Job{Kind: "k", Queue: "plain"})
			cancelled := e.add(t0, &job.Job{Kind: "k", Queue: "cancelled"})
			last := e.add(t0, &job.Job{Kind: "k", Queue: "last", MaxAttempts: 1})
			pill := e.add(t0, &job.Job{Kind: "k", Queue: "pill"})
			e.crash(t0, "pill", pill) // one crash already
			for _, q := range []string{"plain", "cancelled", "last", "pill"} {
				e.claim(store.ClaimParams{Now: at(2000), Limit: 1, Queues: []string{q}, LeaseUntil: at(3000)})
			}
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(2500), ID: cancelled}); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			// Two of them renewed their leases (the last renewal counts).
			beats := map[job.ID]time.Time{plain: at(2700), last: at(2900)}
			for _, ms := range []int{2200, 2700} {
				e.heartbeat(store.HeartbeatParams{Now: at(ms), Worker: worker1, Jobs: leases(e.get(plain)), LeaseUntil: at(3000)})
			}
			e.heartbeat(store.HeartbeatParams{Now: at(2900), Worker: worker1, Jobs: leases(e.get(last)), LeaseUntil: at(3000)})
			now := at(3001)
			want := map[job.ID]*job.Job{}
			for _, id := range []job.ID{plain, cancelled, last, pill} {
				want[id] = e.expect(id, func(j *job.Job) error { return store.ApplyRescue(j, now, beats[id], maxCrashes) })
			}
			moved := e.rescue(store.RescueParams{Now: now, MaxCrashes: maxCrashes})
			wantIDList(t, "Rescue", idsOf(moved), []job.ID{plain, cancelled, last, pill})
			for _, m := range moved {
				e.wantJob("Rescue returned", m, want[m.ID])
				e.wantJob("Rescue stored", e.get(m.ID), want[m.ID])
			}
			for id, st := range map[job.ID]job.State{plain: job.StateAvailable, cancelled: job.StateCancelled, last: job.StateDead, pill: job.StateDead} {
				e.wantState(id, st)
			}
		}},
		{"OracleCancelRescheduleRetry", func(t *testing.T, e *env) {
			waiting := e.inState(t0, &job.Job{Kind: "k", Queue: "w"}, job.StateScheduled)
			running := e.inState(t0, &job.Job{Kind: "k", Queue: "r"}, job.StateRunning)
			moved := e.inState(t0, &job.Job{Kind: "k", Queue: "m"}, job.StateRetrying)
			dead := e.inState(t0, &job.Job{Kind: "k", Queue: "d"}, job.StateDead)
			now := at(1000)
			for _, j := range []*job.Job{waiting, running} {
				want := e.expect(j.ID, func(j *job.Job) error { return store.ApplyCancel(j, now) })
				got, err := e.s.Cancel(e.ctx, store.CancelParams{Now: now, ID: j.ID})
				if err != nil {
					t.Fatalf("Cancel(%d): %v", j.ID, err)
				}
				e.wantJob("Cancel returned", got, want)
				e.wantJob("Cancel stored", e.get(j.ID), want)
			}
			pri := -4
			want := e.expect(moved.ID, func(j *job.Job) error { return store.ApplyReschedule(j, at(500), &pri, now) })
			got, err := e.s.Reschedule(e.ctx, store.RescheduleParams{Now: now, ID: moved.ID, RunAt: at(500), Priority: &pri})
			if err != nil {
				t.Fatalf("Reschedule: %v", err)
			}
			e.wantJob("Reschedule returned", got, want)
			e.wantJob("Reschedule stored", e.get(moved.ID), want)
			want = e.expect(dead.ID, func(j *job.Job) error { return store.ApplyRetryDead(j, now) })
			e.retryDead(store.RetryDeadParams{Now: now, IDs: []job.ID{dead.ID}}, 1)
			e.wantJob("RetryDead", e.get(dead.ID), want)
		}},
		{"OracleSupersede", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("s", t0))
			fired := e.fireP(store.FireScheduleParams{Now: t0, Name: "s", FireTime: t0, Next: at(60000), SkipIfBusy: true})
			c := e.claimExpect(t0, "cron", fired.ID)
			e.finishOne(at(10), c, store.Outcome{State: job.StateRetrying, RunAt: at(120000), Error: "boom"})
			now := at(60000)
			want := e.expect(fired.ID, func(j *job.Job) error { return store.ApplySupersede(j, now, now) })
			res := e.fireP(store.FireScheduleParams{Now: now, Name: "s", FireTime: now, Next: at(120000), SkipIfBusy: true})
			if !res.Fired || res.Superseded != fired.ID {
				t.Errorf("second tick: got %+v, want fired and job %d superseded", res, fired.ID)
			}
			e.wantJob("superseded job", e.get(fired.ID), want)
		}},
	}
}

// fireP calls FireSchedule with p, giving it the validated job of the
// schedule's tick if p.Job is nil.
func (e *env) fireP(p store.FireScheduleParams) store.FireResult {
	e.t.Helper()
	if p.Job == nil {
		p.Job = fireParams(e.t, e.getSchedule(p.Name), p.Now, p.FireTime, p.Next).Job
	}
	res, err := e.s.FireSchedule(e.ctx, p)
	if err != nil {
		e.t.Fatalf("FireSchedule(%+v): %v", p, err)
	}
	return res
}
