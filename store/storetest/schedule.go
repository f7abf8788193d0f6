package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// newSchedule returns a schedule ticking every minute, next at next.
func newSchedule(name string, next time.Time) *job.Schedule {
	return &job.Schedule{
		Name: name, Spec: "@every 1m", Kind: "tick", Args: json.RawMessage(`{"s":1}`),
		NextRunAt: next, CreatedAt: t0, Options: job.Options{Queue: "cron", Priority: 2, MaxAttempts: 3},
	}
}

func (e *env) addSchedule(s *job.Schedule) {
	e.t.Helper()
	if err := e.s.AddSchedule(e.ctx, store.AddScheduleParams{Schedule: s}); err != nil {
		e.t.Fatalf("AddSchedule(%s): %v", s.Name, err)
	}
}

func (e *env) getSchedule(name string) *job.Schedule {
	e.t.Helper()
	s, err := e.s.GetSchedule(e.ctx, name)
	if err != nil {
		e.t.Fatalf("GetSchedule(%s): %v", name, err)
	}
	if s == nil || s.Name != name {
		e.t.Fatalf("GetSchedule(%s): got %+v", name, s)
	}
	return s
}

// fireParams returns the params of firing the tick fireTime of schedule s
// at now, with the job validated as the scheduler would.
func fireParams(t *testing.T, s *job.Schedule, now, fireTime, next time.Time) store.FireScheduleParams {
	t.Helper()
	return store.FireScheduleParams{Now: now, Name: s.Name, FireTime: fireTime, Next: next, Job: validated(t, now, s.NewJob(fireTime))}
}

func (e *env) fire(s *job.Schedule, now, fireTime, next time.Time) store.FireResult {
	e.t.Helper()
	r, err := e.s.FireSchedule(e.ctx, fireParams(e.t, s, now, fireTime, next))
	if err != nil {
		e.t.Fatalf("FireSchedule(%s, %v): %v", s.Name, fireTime, err)
	}
	return r
}

func (e *env) setNext(name string, ifNext, next time.Time) {
	e.t.Helper()
	if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: name, SetNext: true, IfNext: ifNext, Next: next}); err != nil {
		e.t.Fatalf("UpdateSchedule(%s, SetNext %v -> %v): %v", name, ifNext, next, err)
	}
}

// wantSchedule fails unless the stored schedule's tick fields are as given.
func (e *env) wantSchedule(name string, next, lastFire time.Time, lastJob job.ID) {
	e.t.Helper()
	s := e.getSchedule(name)
	wantTime(e.t, name+" NextRunAt", s.NextRunAt, next)
	wantTime(e.t, name+" LastFireAt", s.LastFireAt, lastFire)
	if s.LastJobID != lastJob {
		e.t.Errorf("%s LastJobID: got %d, want %d", name, s.LastJobID, lastJob)
	}
}

func scheduleCases() []testCase {
	return []testCase{
		{"ScheduleAddAndGet", func(t *testing.T, e *env) {
			retry := backoff.Fixed(5 * time.Second)
			in := newSchedule("nightly", at(60000))
			in.Spec, in.TimeZone, in.Overlap, in.Timeout, in.Retry = "0 3 * * *", "Europe/Paris", job.OverlapAllow, time.Minute, &retry
			e.addSchedule(in)
			in.Kind = "changed after AddSchedule"
			g := e.getSchedule("nightly")
			if g.Spec != "0 3 * * *" || g.TimeZone != "Europe/Paris" || g.FixedDelay || g.Overlap != job.OverlapAllow || g.Paused ||
				g.Kind != "tick" || g.Queue != "cron" || g.Priority != 2 || g.MaxAttempts != 3 || g.Timeout != time.Minute || g.LastJobID != 0 {
				t.Errorf("GetSchedule: got %+v, want the schedule added", g)
			}
			if !jsonEqual(g.Args, []byte(`{"s":1}`)) {
				t.Errorf("GetSchedule Args: got %s, want {\"s\":1}", g.Args)
			}
			if g.Retry == nil || !reflect.DeepEqual(*g.Retry, retry) {
				t.Errorf("GetSchedule Retry: got %+v, want %+v", g.Retry, retry)
			}
			wantTime(t, "NextRunAt", g.NextRunAt, at(60000))
			wantTime(t, "CreatedAt", g.CreatedAt, t0)
			if !g.LastFireAt.IsZero() {
				t.Errorf("LastFireAt: got %v, want zero", g.LastFireAt)
			}
			g.Spec, g.Paused = "mutated", true
			if g2 := e.getSchedule("nightly"); g2.Spec != "0 3 * * *" || g2.Paused {
				t.Errorf("GetSchedule after changing a returned schedule: got spec %q paused %v, want it unchanged", g2.Spec, g2.Paused)
			}
		}},
		{"ScheduleOverlapPoliciesRoundTrip", func(t *testing.T, e *env) {
			for _, o := range []job.Overlap{job.OverlapSkip, job.OverlapAllow, job.OverlapCancel} {
				sc := newSchedule("s-"+o.String(), at(60000))
				sc.Overlap = o
				e.addSchedule(sc)
				if got := e.getSchedule(sc.Name).Overlap; got != o {
					t.Errorf("overlap %s stored, %s read back", o, got)
				}
			}
		}},
		{"ScheduleJitterRoundTrips", func(t *testing.T, e *env) {
			for i, m := range []job.JitterMode{job.JitterRandom, job.JitterStable} {
				sc := newSchedule("s-"+m.String(), at(60000))
				sc.Jitter, sc.JitterMode = time.Duration(i+1)*time.Minute, m
				e.addSchedule(sc)
				if got := e.getSchedule(sc.Name); got.Jitter != sc.Jitter || got.JitterMode != m {
					t.Errorf("jitter %s %s stored, %s %s read back", sc.Jitter, m, got.Jitter, got.JitterMode)
				}
			}
		}},
		{"ScheduleCatchUpRoundTrips", func(t *testing.T, e *env) {
			for _, c := range []job.CatchUp{job.CatchUpOne, job.CatchUpNone, job.CatchUpLatest, job.CatchUpAll} {
				sc := newSchedule("s-"+c.String(), at(60000))
				sc.CatchUp = c
				if c == job.CatchUpAll {
					sc.CatchUpWindow, sc.CatchUpMax = 3*time.Hour, 42
				}
				e.addSchedule(sc)
				got := e.getSchedule(sc.Name)
				if got.CatchUp != c || got.CatchUpWindow != sc.CatchUpWindow || got.CatchUpMax != sc.CatchUpMax {
					t.Errorf("catch-up %s/%s/%d stored, %s/%s/%d read back", c, sc.CatchUpWindow, sc.CatchUpMax, got.CatchUp, got.CatchUpWindow, got.CatchUpMax)
				}
			}
		}},
		{"ScheduleAddLeavesWhatIsStored", func(t *testing.T, e *env) {
			// Times finer than any store keeps: after AddSchedule, the
			// schedule given holds the stored times (the client returns it).
			in := newSchedule("fine", at(60000).Add(123456789*time.Nanosecond))
			in.CreatedAt = t0.Add(987654321 * time.Nanosecond)
			e.addSchedule(in)
			g := e.getSchedule("fine")
			for _, c := range []struct {
				name          string
				given, stored time.Time
			}{{"NextRunAt", in.NextRunAt, g.NextRunAt}, {"CreatedAt", in.CreatedAt, g.CreatedAt}} {
				if !c.given.Equal(c.stored) {
					t.Errorf("%s after AddSchedule: %v, but the store keeps %v", c.name, c.given, c.stored)
				}
			}
		}},
		{"ScheduleAddDuplicateNameAndReplace", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("s", at(60000)))
			other := newSchedule("s", at(5000))
			other.Spec = "@every 5s"
			if err := e.s.AddSchedule(e.ctx, store.AddScheduleParams{Schedule: other}); !errors.Is(err, job.ErrDuplicate) {
				t.Errorf("AddSchedule of a taken name: got %v, want job.ErrDuplicate", err)
			}
			if g := e.getSchedule("s"); g.Spec != "@every 1m" || !g.NextRunAt.Equal(at(60000)) {
				t.Errorf("after a duplicate AddSchedule: got spec %q next %v, want @every 1m %v", g.Spec, g.NextRunAt, at(60000))
			}
			if err := e.s.AddSchedule(e.ctx, store.AddScheduleParams{Schedule: other, Replace: true}); err != nil {
				t.Fatalf("AddSchedule with Replace: %v", err)
			}
			if g := e.getSchedule("s"); g.Spec != "@every 5s" || !g.NextRunAt.Equal(at(5000)) {
				t.Errorf("after AddSchedule with Replace: got spec %q next %v, want @every 5s %v", g.Spec, g.NextRunAt, at(5000))
			}
			if n := len(e.listSchedules()); n != 1 {
				t.Errorf("ListSchedules: got %d schedules, want 1", n)
			}
		}},
		{"ScheduleUnknownNameReturnsErrNotFound", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("known", at(60000)))
			if _, err := e.s.GetSchedule(e.ctx, "nope"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("GetSchedule: got %v, want job.ErrNotFound", err)
			}
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "nope", Paused: boolp(true)}); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("UpdateSchedule: got %v, want job.ErrNotFound", err)
			}
			if err := e.s.RemoveSchedule(e.ctx, "nope"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("RemoveSchedule: got %v, want job.ErrNotFound", err)
			}
			p := fireParams(t, newSchedule("nope", at(60000)), at(60000), at(60000), at(120000))
			if _, err := e.s.FireSchedule(e.ctx, p); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("FireSchedule: got %v, want job.ErrNotFound", err)
			}
			e.wantIDs("after FireSchedule of an unknown schedule")
		}},
		{"ScheduleListOrderedByName", func(t *testing.T, e *env) {
			if got := e.listSchedules(); len(got) != 0 {
				t.Errorf("ListSchedules of an empty store: got %d schedules, want 0", len(got))
			}
			for _, n := range []string{"charlie", "alpha", "bravo"} {
				e.addSchedule(newSchedule(n, at(60000)))
			}
			var names []string
			for _, s := range e.listSchedules() {
				names = append(names, s.Name)
			}
			if len(names) != 3 || names[0] != "alpha" || names[1] != "bravo" || names[2] != "charlie" {
				t.Errorf("ListSchedules: got %v, want [alpha bravo charlie]", names)
			}
		}},
		{"ScheduleUpdatePaused", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("s", at(60000)))
			g, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: boolp(true)})
			if err != nil || g == nil || !g.Paused {
				t.Fatalf("UpdateSchedule(paused): got %+v, %v, want paused", g, err)
			}
			if s := e.getSchedule("s"); !s.Paused || !s.NextRunAt.Equal(at(60000)) {
				t.Errorf("after pausing: got paused %v next %v, want true %v", s.Paused, s.NextRunAt, at(60000))
			}
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s"}); err != nil {
				t.Fatalf("UpdateSchedule(nothing): %v", err)
			}
			if s := e.getSchedule("s"); !s.Paused {
				t.Errorf("after an empty update: got paused false, want true")
			}
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: boolp(false)}); err != nil {
				t.Fatalf("UpdateSchedule(resume): %v", err)
			}
			if s := e.getSchedule("s"); s.Paused {
				t.Errorf("after resuming: got paused true, want false")
			}
		}},
		{"ScheduleUpdateSetNextIsCompareAndSet", func(t *testing.T, e *env) {
			e.addSchedule(newSchedule("s", at(60000)))
			g, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", SetNext: true, IfNext: at(60000), Next: at(120000)})
			if err != nil || g == nil {
				t.Fatalf("UpdateSchedule(SetNext): got %+v, %v", g, err)
			}
			wantTime(t, "returned NextRunAt", g.NextRunAt, at(120000))
			wantTime(t, "stored NextRunAt", e.getSchedule("s").NextRunAt, at(120000))
			_, err = e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: boolp(true), SetNext: true, IfNext: at(60000), Next: at(999)})
			if !errors.Is(err, job.ErrConflict) {
				t.Errorf("UpdateSchedule(SetNext) with a stale IfNext: got %v, want job.ErrConflict", err)
			}
			if s := e.getSchedule("s"); s.Paused || !s.NextRunAt.Equal(at(120000)) {
				t.Errorf("after a conflict: got paused %v next %v, want false %v", s.Paused, s.NextRunAt, at(120000))
			}
			e.setNext("s", at(120000), time.Time{})
			if s := e.getSchedule("s"); !s.NextRunAt.IsZero() {
				t.Errorf("after SetNext to zero: got next %v, want zero", s.NextRunAt)
			}
			e.setNext("s", time.Time{}, at(180000))
			wantTime(t, "NextRunAt after SetNext from zero", e.getSchedule("s").NextRunAt, at(180000))
		}},
		{"ScheduleRemoveKeepsJobs", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			r := e.fire(s, at(60000), at(60000), at(120000))
			if err := e.s.RemoveSchedule(e.ctx, "s"); err != nil {
				t.Fatalf("RemoveSchedule: %v", err)
			}
			if _, err := e.s.GetSchedule(e.ctx, "s"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("GetSchedule after RemoveSchedule: got %v, want job.ErrNotFound", err)
			}
			if err := e.s.RemoveSchedule(e.ctx, "s"); !errors.Is(err, job.ErrNotFound) {
				t.Errorf("second RemoveSchedule: got %v, want job.ErrNotFound", err)
			}
			e.wantIDs("after RemoveSchedule", r.ID)
		}},
		{"FireScheduleFiresOnce", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			r := e.fire(s, at(60010), at(60000), at(120000))
			if !r.Fired || r.ID <= 0 {
				t.Fatalf("FireSchedule: got %+v, want fired with an ID", r)
			}
			j := e.get(r.ID)
			if j.Schedule != "s" || j.Kind != "tick" || j.Queue != "cron" || j.Priority != 2 || j.MaxAttempts != 3 || j.State != job.StateAvailable {
				t.Errorf("fired job: got schedule %q kind %q queue %q priority %d max attempts %d state %s, want s tick cron 2 3 available",
					j.Schedule, j.Kind, j.Queue, j.Priority, j.MaxAttempts, j.State)
			}
			wantTime(t, "fired job FireTime", j.FireTime, at(60000))
			e.wantSchedule("s", at(120000), at(60000), r.ID)

			again := e.fire(s, at(60020), at(60000), at(120000))
			if again.Fired {
				t.Errorf("second FireSchedule of the same tick: got %+v, want not fired", again)
			}
			e.wantIDs("after the second FireSchedule", r.ID)
			e.wantSchedule("s", at(120000), at(60000), r.ID)

			next := e.fire(s, at(120000), at(120000), at(180000))
			if !next.Fired || next.ID <= r.ID {
				t.Errorf("FireSchedule of the next tick: got %+v, want fired with an ID above %d", next, r.ID)
			}
			e.wantSchedule("s", at(180000), at(120000), next.ID)
		}},
		{"FireScheduleIfNextPassesOverTicks", func(t *testing.T, e *env) {
			// A catch-up's first step: from NextRunAt 1m, tick 3m fires and
			// 2m is passed over, in one compare-and-set.
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			p := fireParams(t, s, at(200000), at(180000), at(240000))
			p.IfNext = at(60000)
			r, err := e.s.FireSchedule(e.ctx, p)
			if err != nil || !r.Fired {
				t.Fatalf("FireSchedule of 3m from 1m: got %+v, %v, want fired", r, err)
			}
			wantTime(t, "fired job FireTime", e.get(r.ID).FireTime, at(180000))
			e.wantSchedule("s", at(240000), at(180000), r.ID)
			// NextRunAt is no longer IfNext, nor FireTime: nothing changes.
			for _, p := range []store.FireScheduleParams{p, fireParams(t, s, at(200000), at(240000), at(300000))} {
				p.IfNext = at(60000)
				if again, err := e.s.FireSchedule(e.ctx, p); err != nil || again != (store.FireResult{}) {
					t.Errorf("FireSchedule of %v from 1m after the schedule moved: got %+v, %v, want a zero result", p.FireTime, again, err)
				}
			}
			e.wantIDs("after the stale firings", r.ID)
			e.wantSchedule("s", at(240000), at(180000), r.ID)
		}},
		{"FireScheduleWithEnqueuesOnlyWhenTheStepWins", func(t *testing.T, e *env) {
			// A catch-up's first step carries its over-cap notification:
			// stored with the step when it fires or skips, never when its
			// compare-and-set loses, nor when With is invalid.
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			note := func(n int) []*job.Job {
				var js []*job.Job
				for i := range n {
					js = append(js, validated(t, at(200000), &job.Job{Kind: "note", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}))
				}
				return js
			}
			notes := func() int {
				n := 0
				for _, j := range e.all() {
					if j.Kind == "note" {
						n++
						if j.Schedule != "" || !j.FireTime.IsZero() {
							t.Errorf("With job %d: schedule %q, fire time %v, want neither", j.ID, j.Schedule, j.FireTime)
						}
					}
				}
				return n
			}
			bad := fireParams(t, s, at(200000), at(180000), at(240000))
			bad.IfNext, bad.With = at(60000), []*job.Job{{Kind: "note"}}
			var fe *job.FieldError
			if r, err := e.s.FireSchedule(e.ctx, bad); !errors.As(err, &fe) || r != (store.FireResult{}) {
				t.Errorf("FireSchedule with an unvalidated With job: got %+v, %v, want a *job.FieldError", r, err)
			}
			e.wantIDs("after the invalid With")
			e.wantSchedule("s", at(60000), time.Time{}, 0)

			p := fireParams(t, s, at(200000), at(180000), at(240000))
			p.IfNext, p.With = at(60000), note(2)
			r, err := e.s.FireSchedule(e.ctx, p)
			if err != nil || !r.Fired {
				t.Fatalf("FireSchedule with With: got %+v, %v, want fired", r, err)
			}
			if n := notes(); n != 2 {
				t.Errorf("With jobs after the winning step: got %d, want 2", n)
			}
			e.wantSchedule("s", at(240000), at(180000), r.ID)
			p.With = note(2)
			if again, err := e.s.FireSchedule(e.ctx, p); err != nil || again != (store.FireResult{}) {
				t.Errorf("FireSchedule after the schedule moved: got %+v, %v, want a zero result", again, err)
			}
			if n := notes(); n != 2 {
				t.Errorf("With jobs after the lost compare-and-set: got %d, want still 2", n)
			}
			// The tick's job is still available: skipped, With stored.
			sp := fireParams(t, s, at(240000), at(240000), at(300000))
			sp.SkipIfBusy, sp.With = true, note(1)
			if sk, err := e.s.FireSchedule(e.ctx, sp); err != nil || !sk.Skipped {
				t.Fatalf("FireSchedule with SkipIfBusy and With: got %+v, %v, want skipped", sk, err)
			}
			if n := notes(); n != 3 {
				t.Errorf("With jobs after the skipped step: got %d, want 3", n)
			}
		}},
		{"FireScheduleStaleFireTimeChangesNothing", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			for _, ft := range []time.Time{at(30000), at(90000), {}} {
				r, err := e.s.FireSchedule(e.ctx, fireParams(t, s, at(60000), ft, at(120000)))
				if err != nil || r.Fired {
					t.Errorf("FireSchedule with fire time %v: got %+v, %v, want not fired and no error", ft, r, err)
				}
			}
			e.wantIDs("after stale FireSchedule calls")
			e.wantSchedule("s", at(60000), time.Time{}, 0)
		}},
		{"FireSchedulePausedChangesNothing", func(t *testing.T, e *env) {
			// A pause that commits while a process is firing the tick it read
			// before wins: the tick neither fires nor advances.
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: boolp(true)}); err != nil {
				t.Fatal(err)
			}
			if r := e.fire(s, at(60010), at(60000), at(120000)); r.Fired || r.ID != 0 || r.Skipped {
				t.Errorf("FireSchedule of a paused schedule: got %+v, want nothing", r)
			}
			e.wantIDs("after firing a paused schedule")
			e.wantSchedule("s", at(60000), time.Time{}, 0)
		}},
		{"FireScheduleOfFiredTickOnlyAdvances", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			r := e.fire(s, at(60000), at(60000), at(120000))
			c := e.claimExpect(at(60000), "cron", r.ID)
			e.finishOne(at(61000), c, store.Outcome{State: job.StateCompleted})
			e.setNext("s", at(120000), at(60000)) // move back to the fired tick
			again := e.fire(s, at(62000), at(60000), at(180000))
			if again.Fired {
				t.Errorf("FireSchedule of a tick whose job exists: got %+v, want not fired", again)
			}
			e.wantIDs("after firing a fired tick", r.ID)
			e.wantSchedule("s", at(180000), at(60000), r.ID)
		}},
		{"FireScheduleAfterPurgeFiresAgain", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			r := e.fire(s, at(60000), at(60000), at(120000))
			c := e.claimExpect(at(60000), "cron", r.ID)
			e.finishOne(at(61000), c, store.Outcome{State: job.StateCompleted})
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, All: true}, 1)
			e.setNext("s", at(120000), at(60000))
			again := e.fire(s, at(62000), at(60000), at(120000))
			if !again.Fired || again.ID == r.ID {
				t.Errorf("FireSchedule after the tick's job was purged: got %+v, want fired with a new ID", again)
			}
		}},
		{"FireScheduleWithZeroNextWaits", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			s.FixedDelay, s.Spec = true, "5m"
			e.addSchedule(s)
			r := e.fire(s, at(60000), at(60000), time.Time{})
			if !r.Fired {
				t.Fatalf("FireSchedule: got %+v, want fired", r)
			}
			e.wantSchedule("s", time.Time{}, at(60000), r.ID)
		}},
	}
}

func (e *env) listSchedules() []*job.Schedule {
	e.t.Helper()
	ss, err := e.s.ListSchedules(e.ctx)
	if err != nil {
		e.t.Fatalf("ListSchedules: %v", err)
	}
	return ss
}
