package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// guardCases check what a store must refuse or must not share: callers'
// bytes, empty selections of destructive operations, times out of range,
// and the skip overlap policy of schedules.
func guardCases() []testCase {
	return []testCase{
		{"CopiesInAndOut", func(t *testing.T, e *env) {
			args := json.RawMessage(`{"to":"a@example.com"}`)
			id := e.add(t0, &job.Job{Kind: "k", Args: args})
			copy(args, `{"to":"x@example.com"}`) // the caller reuses its buffer
			if g := e.get(id); !jsonEqual(g.Args, []byte(`{"to":"a@example.com"}`)) {
				t.Errorf("after the caller changed its args buffer: stored args %s", g.Args)
			}
			c := e.claimExpect(t0, job.DefaultQueue, id)
			rec := record(c, at(10), "retrying", "e")
			rec.Result = json.RawMessage(`{"n":1}`)
			e.finishOne(at(10), c, store.Outcome{State: job.StateRetrying, RunAt: at(20), Error: "e", Record: rec})
			c.Args[2] = 'X' // the claimed copy
			rec.Result[2] = 'X'
			g := e.get(id)
			g.Args[2] = 'X'
			g.Attempts[0].Result[2] = 'X'
			g.Attempts[0].Error = "changed"
			h := e.get(id)
			if !jsonEqual(h.Args, []byte(`{"to":"a@example.com"}`)) || !jsonEqual(h.Attempts[0].Result, []byte(`{"n":1}`)) || h.Attempts[0].Error != "e" {
				t.Errorf("after callers changed returned jobs: args %s attempt %+v", h.Args, h.Attempts[0])
			}
		}},
		{"EmptySelectionsAreRefused", func(t *testing.T, e *env) {
			dead := e.inState(t0, &job.Job{Kind: "k"}, job.StateDead)
			done := e.inState(t0, &job.Job{Kind: "k", Queue: "q2"}, job.StateCompleted)
			var fe *job.FieldError
			for _, p := range []store.RetryDeadParams{
				{Now: at(1)},
				{Now: at(1), IDs: []job.ID{}},
				{Now: at(1), IDs: []job.ID{dead.ID}, All: true},
			} {
				if n, err := e.s.RetryDead(e.ctx, p); !errors.As(err, &fe) || n != 0 {
					t.Errorf("RetryDead(%+v): got %d, %v, want a *job.FieldError", p, n, err)
				}
			}
			for _, p := range []store.PurgeParams{
				{States: []job.State{job.StateDead, job.StateCompleted}},
				{States: []job.State{job.StateDead}, IDs: []job.ID{}},
				{States: []job.State{job.StateDead}, All: true, Before: at(5)},
				{IDs: []job.ID{dead.ID}},
			} {
				if n, err := e.s.Purge(e.ctx, p); !errors.As(err, &fe) || n != 0 {
					t.Errorf("Purge(%+v): got %d, %v, want a *job.FieldError", p, n, err)
				}
			}
			e.unchanged("dead job", dead)
			e.unchanged("completed job", done)
		}},
		{"RescheduleOutOfRangeIsRefused", func(t *testing.T, e *env) {
			j := e.inState(t0, &job.Job{Kind: "k"}, job.StateScheduled)
			var fe *job.FieldError
			for _, runAt := range []time.Time{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC)} {
				if _, err := e.s.Reschedule(e.ctx, store.RescheduleParams{Now: at(1), ID: j.ID, RunAt: runAt}); !errors.As(err, &fe) || fe.Field != "run_at" {
					t.Errorf("Reschedule to %v: got %v, want a *job.FieldError on run_at", runAt, err)
				}
			}
			e.unchanged("job", j)
		}},
		{"FireSkipIfBusy", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("s", t0))
			first := e.fireP(store.FireScheduleParams{Now: t0, Name: "s", FireTime: t0, Next: at(60000), SkipIfBusy: true})
			if !first.Fired {
				t.Fatalf("first tick: %+v, want fired", first)
			}
			// Available: about to run, so the next tick is skipped.
			res := e.fireP(store.FireScheduleParams{Now: at(60000), Name: "s", FireTime: at(60000), Next: at(120000), SkipIfBusy: true})
			if res.Fired || !res.Skipped || res.Busy != job.StateAvailable {
				t.Errorf("tick while the job is available: got %+v, want skipped, busy available", res)
			}
			c := e.claimExpect(at(60000), "cron", first.ID)
			res = e.fireP(store.FireScheduleParams{Now: at(120000), Name: "s", FireTime: at(120000), Next: at(180000), SkipIfBusy: true})
			if res.Fired || !res.Skipped || res.Busy != job.StateRunning {
				t.Errorf("tick while the job runs: got %+v, want skipped, busy running", res)
			}
			sc := e.getSchedule("s")
			if sc.SkippedTicks != 2 || sc.LastJobID != first.ID {
				t.Errorf("after two skips: skipped %d last job %d, want 2 %d", sc.SkippedTicks, sc.LastJobID, first.ID)
			}
			wantTime(t, "LastSkipAt", sc.LastSkipAt, at(120000))
			wantTime(t, "NextRunAt", sc.NextRunAt, at(180000))
			e.finishOne(at(130000), c, store.Outcome{State: job.StateCompleted})
			res = e.fireP(store.FireScheduleParams{Now: at(180000), Name: "s", FireTime: at(180000), Next: at(240000), SkipIfBusy: true})
			if !res.Fired || res.Skipped || res.Superseded != 0 {
				t.Errorf("tick after the job completed: got %+v, want fired", res)
			}
			sc = e.getSchedule("s")
			if sc.SkippedTicks != 0 || !sc.LastSkipAt.IsZero() || sc.LastJobID != res.ID {
				t.Errorf("after firing: skipped %d last skip %v last job %d, want 0, zero, %d", sc.SkippedTicks, sc.LastSkipAt, sc.LastJobID, res.ID)
			}
			// Without SkipIfBusy a tick fires whatever the previous job does.
			res = e.fireP(store.FireScheduleParams{Now: at(240000), Name: "s", FireTime: at(240000), Next: at(300000)})
			if !res.Fired {
				t.Errorf("tick with overlap allowed: got %+v, want fired", res)
			}
		}},
		{"FireManual", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("s", at(60000)))
			paused := true
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: &paused}); err != nil {
				t.Fatal(err)
			}
			// A run now fires while paused, whatever NextRunAt, and moves no tick.
			first := e.fireP(store.FireScheduleParams{Now: at(10), Name: "s", Manual: true, SkipIfBusy: true})
			if !first.Fired || first.Skipped {
				t.Fatalf("run now of a paused schedule: %+v, want fired", first)
			}
			j := e.get(first.ID)
			if !j.Manual() || j.Schedule != "s" || !j.FireTime.IsZero() || j.Kind != "tick" || j.Queue != "cron" || j.Priority != 2 || j.MaxAttempts != 3 {
				t.Errorf("manual job: %+v, want kind tick, queue cron, priority 2, max attempts 3, schedule s, no fire time", j)
			}
			e.wantSchedule("s", at(60000), time.Time{}, first.ID)
			// The skip policy sees the waiting run; a skipped run now is not counted.
			res := e.fireP(store.FireScheduleParams{Now: at(20), Name: "s", Manual: true, SkipIfBusy: true})
			if res.Fired || !res.Skipped || res.Busy != job.StateAvailable {
				t.Errorf("run now while the last run waits: %+v, want skipped, busy available", res)
			}
			if sc := e.getSchedule("s"); sc.SkippedTicks != 0 || !sc.LastSkipAt.IsZero() {
				t.Errorf("after a skipped run now: skipped ticks %d, last skip %v; want 0, zero", sc.SkippedTicks, sc.LastSkipAt)
			}
			// Forced (no SkipIfBusy): a second manual run; any number may exist.
			second := e.fireP(store.FireScheduleParams{Now: at(30), Name: "s", Manual: true})
			if !second.Fired || second.ID == first.ID {
				t.Fatalf("forced run now: %+v, want a second job", second)
			}
			e.wantSchedule("s", at(60000), time.Time{}, second.ID)
			paused = false
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: &paused}); err != nil {
				t.Fatal(err)
			}
			// The next tick's skip policy sees the manual run as the previous job.
			res = e.fireP(store.FireScheduleParams{Now: at(60000), Name: "s", FireTime: at(60000), Next: at(120000), SkipIfBusy: true})
			if res.Fired || !res.Skipped || res.Busy != job.StateAvailable {
				t.Errorf("tick while the manual run waits: %+v, want skipped, busy available", res)
			}
			tick := e.fireP(store.FireScheduleParams{Now: at(120000), Name: "s", FireTime: at(120000), Next: at(180000)})
			if !tick.Fired {
				t.Fatalf("tick with overlap allowed: %+v, want fired", tick)
			}
			if g := e.get(tick.ID); g.Manual() || !g.FireTime.Equal(at(120000)) {
				t.Errorf("tick's job: manual %v fire time %v, want a tick at %v", g.Manual(), g.FireTime, at(120000))
			}
			e.wantSchedule("s", at(180000), at(120000), tick.ID)
			// A manual run of an unknown schedule is ErrNotFound.
			_, err := e.s.FireSchedule(e.ctx, store.FireScheduleParams{Now: at(1), Name: "nope", Manual: true, Job: e.get(first.ID)})
			if err == nil {
				t.Errorf("run now of an unknown schedule: got no error")
			}
		}},
	}
}
