package storetest

import (
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// The buffer overlap policies (OverlapBufferOne, OverlapBufferAll) in
// FireSchedule: FireScheduleParams.Buffer and Release, decided by
// store.ApplyBuffer and store.ApplyRelease.

func (e *env) fireBuffered(s *job.Schedule, now, fireTime, next time.Time, buffer int) store.FireResult {
	e.t.Helper()
	p := fireParams(e.t, s, now, fireTime, next)
	p.Buffer = buffer
	r, err := e.s.FireSchedule(e.ctx, p)
	if err != nil {
		e.t.Fatalf("FireSchedule(%s, %v, buffer %d): %v", s.Name, fireTime, buffer, err)
	}
	return r
}

func (e *env) release(s *job.Schedule, now, fireTime time.Time) store.FireResult {
	e.t.Helper()
	p := fireParams(e.t, s, now, fireTime, time.Time{})
	p.Release = true
	r, err := e.s.FireSchedule(e.ctx, p)
	if err != nil {
		e.t.Fatalf("FireSchedule(%s, release %v): %v", s.Name, fireTime, err)
	}
	return r
}

func (e *env) wantBuffered(name string, want ...time.Time) {
	e.t.Helper()
	got := e.getSchedule(name).Buffered
	if len(got) != len(want) {
		e.t.Fatalf("%s Buffered: got %v, want %v", name, got, want)
	}
	for i := range want {
		wantTime(e.t, name+" Buffered", got[i], want[i])
	}
}

func (e *env) backfill(s *job.Schedule, now, tick time.Time, buffer int) store.FireResult {
	e.t.Helper()
	p := fireParams(e.t, s, now, tick, time.Time{})
	p.Backfill, p.Buffer = true, buffer
	r, err := e.s.FireSchedule(e.ctx, p)
	if err != nil {
		e.t.Fatalf("FireSchedule(%s, backfill %v): %v", s.Name, tick, err)
	}
	return r
}

func bufferCases() []testCase {
	return []testCase{
		{"FireScheduleBackfillFiresEachTickOnce", func(t *testing.T, e *env) {
			// A backfilled tick is that tick's job, once; it moves no tick,
			// and a paused schedule is backfilled too.
			s := newSchedule("s", at(600000))
			s.Overlap = job.OverlapAllow
			e.addSchedule(s)
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: boolp(true)}); err != nil {
				t.Fatal(err)
			}
			r := e.backfill(s, at(700000), at(60000), 0)
			if !r.Fired || r.Existed {
				t.Fatalf("backfill of a past tick: got %+v, want fired", r)
			}
			if j := e.get(r.ID); !j.FireTime.Equal(at(60000)) || j.Schedule != "s" {
				t.Errorf("backfilled job: schedule %q fire time %v, want s at %v", j.Schedule, j.FireTime, at(60000))
			}
			e.wantSchedule("s", at(600000), time.Time{}, r.ID)
			if again := e.backfill(s, at(700001), at(60000), 0); again.Fired || !again.Existed {
				t.Errorf("second backfill of the tick: got %+v, want existed, nothing fired", again)
			}
			second := e.backfill(s, at(700002), at(120000), 0)
			if !second.Fired {
				t.Errorf("backfill of the next tick: got %+v, want fired", second)
			}
			e.wantIDs("after the backfills", r.ID, second.ID)
		}},
		{"FireScheduleBackfillObeysBuffer", func(t *testing.T, e *env) {
			s := newSchedule("s", at(600000))
			s.Overlap = job.OverlapBufferAll
			e.addSchedule(s)
			first := e.backfill(s, at(700000), at(60000), 3)
			r := e.backfill(s, at(700000), at(120000), 3)
			if !r.Buffered || r.Busy != job.StateAvailable {
				t.Fatalf("backfill while the first backfilled job waits: got %+v, want buffered", r)
			}
			e.wantBuffered("s", at(120000))
			c := e.claimExpect(at(700001), "cron", first.ID)
			e.finishOne(at(700002), c, store.Outcome{State: job.StateCompleted})
			rel := e.release(s, at(700003), at(120000))
			if !rel.Fired || !e.get(rel.ID).FireTime.Equal(at(120000)) {
				t.Errorf("release of the buffered backfill: got %+v, want the tick of %v fired", rel, at(120000))
			}
			if again := e.backfill(s, at(700004), at(120000), 3); !again.Existed {
				t.Errorf("backfill of a released tick: got %+v, want existed", again)
			}
		}},
		{"ScheduleOverlapBufferPoliciesRoundTrip", func(t *testing.T, e *env) {
			for _, o := range []job.Overlap{job.OverlapBufferOne, job.OverlapBufferAll, job.OverlapTerminate} {
				sc := newSchedule("s-"+o.String(), at(60000))
				sc.Overlap = o
				e.addSchedule(sc)
				if got := e.getSchedule(sc.Name).Overlap; got != o {
					t.Errorf("overlap %s stored, %s read back", o, got)
				}
			}
		}},
		{"FireScheduleBufferOneKeepsOneRunAndCountsTheRest", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			s.Overlap = job.OverlapBufferOne
			e.addSchedule(s)
			first := e.fireBuffered(s, at(60000), at(60000), at(120000), 1)
			if !first.Fired {
				t.Fatalf("first tick: got %+v, want fired (nothing to wait for)", first)
			}
			c := e.claimExpect(at(60000), "cron", first.ID)
			r := e.fireBuffered(s, at(120000), at(120000), at(180000), 1)
			if !r.Buffered || r.Fired || r.Skipped || r.Busy != job.StateRunning {
				t.Errorf("tick while the first job runs: got %+v, want buffered behind a running job", r)
			}
			e.wantBuffered("s", at(120000))
			e.wantSchedule("s", at(180000), at(60000), first.ID)
			r = e.fireBuffered(s, at(180000), at(180000), at(240000), 1)
			if !r.Skipped || r.Buffered || r.Fired {
				t.Errorf("tick with one run buffered: got %+v, want skipped", r)
			}
			if sc := e.getSchedule("s"); sc.SkippedTicks != 1 || !sc.LastSkipAt.Equal(at(180000)) {
				t.Errorf("after the skipped tick: %d skipped, last at %v; want 1 at %v", sc.SkippedTicks, sc.LastSkipAt, at(180000))
			}
			e.wantBuffered("s", at(120000))
			if r := e.release(s, at(190000), at(120000)); r.Fired || r.Busy != job.StateRunning {
				t.Errorf("release while the first job runs: got %+v, want nothing, busy running", r)
			}
			e.wantBuffered("s", at(120000))
			e.finishOne(at(200000), c, store.Outcome{State: job.StateCompleted})
			if r := e.release(s, at(200000), at(180000)); r.Fired {
				t.Errorf("release of a time not first in the buffer: got %+v, want nothing", r)
			}
			r = e.release(s, at(200000), at(120000))
			if !r.Fired || r.ID == 0 {
				t.Fatalf("release after the first job finished: got %+v, want fired", r)
			}
			j := e.get(r.ID)
			if j.Schedule != "s" || !j.FireTime.Equal(at(120000)) || j.State != job.StateAvailable {
				t.Errorf("released job: schedule %q, fire time %v, %s; want s, %v, available", j.Schedule, j.FireTime, j.State, at(120000))
			}
			e.wantBuffered("s")
			e.wantSchedule("s", at(240000), at(120000), r.ID)
			if again := e.release(s, at(200001), at(120000)); again.Fired {
				t.Errorf("second release of one run: got %+v, want nothing", again)
			}
			e.wantIDs("after the buffered run", first.ID, r.ID)
		}},
		{"FireScheduleBufferAllRunsInOrderOneAtATime", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			s.Overlap = job.OverlapBufferAll
			e.addSchedule(s)
			first := e.fireBuffered(s, at(60000), at(60000), at(120000), 3)
			c := e.claimExpect(at(60000), "cron", first.ID)
			for i, tick := range []int{120000, 180000, 240000} {
				if r := e.fireBuffered(s, at(tick), at(tick), at(tick+60000), 3); !r.Buffered {
					t.Fatalf("tick %d while the first job runs: got %+v, want buffered", i+2, r)
				}
			}
			if r := e.fireBuffered(s, at(300000), at(300000), at(360000), 3); !r.Skipped {
				t.Errorf("tick with the buffer full: got %+v, want skipped", r)
			}
			e.wantBuffered("s", at(120000), at(180000), at(240000))
			e.finishOne(at(301000), c, store.Outcome{State: job.StateDead, Error: "boom"})
			second := e.release(s, at(301000), at(120000))
			if !second.Fired {
				t.Fatalf("release after the first job died: got %+v, want fired", second)
			}
			// A tick while runs wait joins the end, even though the job of
			// the released run has not started.
			if r := e.fireBuffered(s, at(360000), at(360000), at(420000), 4); !r.Buffered || r.Busy != job.StateAvailable {
				t.Errorf("tick while the released run waits for a worker: got %+v, want buffered behind an available job", r)
			}
			if r := e.release(s, at(361000), at(180000)); r.Fired || r.Busy != job.StateAvailable {
				t.Errorf("release while the released run waits: got %+v, want nothing, busy available", r)
			}
			c = e.claimExpect(at(362000), "cron", second.ID)
			e.finishOne(at(363000), c, store.Outcome{State: job.StateCompleted})
			third := e.release(s, at(363000), at(180000))
			if !third.Fired || !e.get(third.ID).FireTime.Equal(at(180000)) {
				t.Fatalf("release in order: got %+v, want the tick of %v fired", third, at(180000))
			}
			e.wantBuffered("s", at(240000), at(360000))
			e.wantSchedule("s", at(420000), at(180000), third.ID)
		}},
		{"FireScheduleBufferFiresWhenNothingWaits", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			s.Overlap = job.OverlapBufferOne
			e.addSchedule(s)
			first := e.fireBuffered(s, at(60000), at(60000), at(120000), 1)
			c := e.claimExpect(at(60000), "cron", first.ID)
			e.finishOne(at(61000), c, store.Outcome{State: job.StateCompleted})
			r := e.fireBuffered(s, at(120000), at(120000), at(180000), 1)
			if !r.Fired || r.Buffered {
				t.Errorf("tick after the previous job completed: got %+v, want fired", r)
			}
			e.wantBuffered("s")
		}},
		{"FireScheduleBufferRunNow", func(t *testing.T, e *env) {
			// A run now buffers as a zero time and is released as a manual
			// run; it moves no tick.
			s := newSchedule("s", at(60000))
			s.Overlap = job.OverlapBufferOne
			e.addSchedule(s)
			first := e.fireBuffered(s, at(60000), at(60000), at(120000), 1)
			c := e.claimExpect(at(60000), "cron", first.ID)
			p := fireParams(t, s, at(70000), time.Time{}, time.Time{})
			p.Manual, p.Buffer = true, 1
			r, err := e.s.FireSchedule(e.ctx, p)
			if err != nil || !r.Buffered {
				t.Fatalf("run now while the tick's job runs: got %+v, %v, want buffered", r, err)
			}
			e.wantBuffered("s", time.Time{})
			e.wantSchedule("s", at(120000), at(60000), first.ID)
			if r, err := e.s.FireSchedule(e.ctx, p); err != nil || !r.Skipped {
				t.Errorf("second run now with one buffered: got %+v, %v, want skipped", r, err)
			}
			if sc := e.getSchedule("s"); sc.SkippedTicks != 0 {
				t.Errorf("a skipped run now counted: %d skipped ticks, want 0", sc.SkippedTicks)
			}
			e.finishOne(at(80000), c, store.Outcome{State: job.StateCompleted})
			r = e.release(s, at(80000), time.Time{})
			if !r.Fired {
				t.Fatalf("release of the run now: got %+v, want fired", r)
			}
			if j := e.get(r.ID); !j.Manual() {
				t.Errorf("released run now: fire time %v, want a manual run", j.FireTime)
			}
			e.wantBuffered("s")
			e.wantSchedule("s", at(120000), at(60000), r.ID)
		}},
		{"FireScheduleBufferPausedReleasesNothing", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			s.Overlap = job.OverlapBufferOne
			e.addSchedule(s)
			first := e.fireBuffered(s, at(60000), at(60000), at(120000), 1)
			c := e.claimExpect(at(60000), "cron", first.ID)
			e.fireBuffered(s, at(120000), at(120000), at(180000), 1)
			e.finishOne(at(121000), c, store.Outcome{State: job.StateCompleted})
			if _, err := e.s.UpdateSchedule(e.ctx, store.UpdateScheduleParams{Name: "s", Paused: boolp(true)}); err != nil {
				t.Fatal(err)
			}
			if r := e.release(s, at(122000), at(120000)); r.Fired {
				t.Errorf("release of a paused schedule: got %+v, want nothing", r)
			}
			e.wantBuffered("s", at(120000))
		}},
	}
}
