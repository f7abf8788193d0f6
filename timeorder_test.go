package hopper_test

// Tests of when jobs run: in time order, never once cancelled, rescheduled
// without stale copies, fixed-rate versus fixed-delay recurrence, cron
// rules, a 5s/30s/300s retry list, a fake clock, stable tie-breaking, and
// a sleeping scheduler woken by earlier work. They replay the design
// document "Building an Event Scheduler" (seed 002 of docs/architecture.md),
// whose events are jobs of kind "event" here.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	_ "time/tzdata" // Europe/Berlin without relying on the system's zoneinfo

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

// namedEvent is the seed's Event: a name and a payload.
type namedEvent struct {
	Name    string         `json:"name"`
	Payload map[string]any `json:"payload,omitempty"`
}

// eventClient returns a client whose kind "event" records event names.
func eventClient(t *testing.T) (*hopper.Client, *recorder) {
	t.Helper()
	rec := new(recorder)
	ws := hopper.NewWorkers()
	hopper.Register(ws, "event", func(ctx context.Context, e namedEvent) (any, error) {
		rec.add(e.Name)
		return nil, nil
	}, nil)
	return silentClient(t, hopper.Config{Workers: ws}), rec
}

func scheduleEvent(t *testing.T, c *hopper.Client, name string, at time.Time, prio int) hopper.ID {
	t.Helper()
	res, err := c.Enqueue(context.Background(), "event", namedEvent{Name: name}, &hopper.EnqueueOptions{RunAt: at, Priority: prio})
	if err != nil {
		t.Fatalf("Enqueue %s: %v", name, err)
	}
	return res.ID
}

// dayAt returns h:m on farFuture's day.
func dayAt(h, m int) time.Time {
	return farFuture.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

// expectRan runs the events due at now and checks how many ran.
func expectRan(t *testing.T, c *hopper.Client, now time.Time, want int) {
	t.Helper()
	if n := runReadyCount(t, c, now); n != want {
		t.Errorf("RunReady at %s ran %d events, want %d", now.Format("15:04:05"), n, want)
	}
}

func runReadyCount(t *testing.T, c *hopper.Client, now time.Time) int {
	t.Helper()
	ran, err := c.RunReady(context.Background(), now)
	if err != nil {
		t.Fatalf("RunReady(%s): %v", now, err)
	}
	return len(ran)
}

// TestRunsInTimeOrder: send_email 09:00, backup_database 02:00 and
// refresh_cache 09:05 run in time order, whether the clock jumps past all of
// them at once or steps through the day.
func TestRunsInTimeOrder(t *testing.T) {
	t.Parallel()
	at := dayAt
	enqueue := func(c *hopper.Client) {
		scheduleEvent(t, c, "send_email", at(9, 0), 0)
		scheduleEvent(t, c, "backup_database", at(2, 0), 0)
		scheduleEvent(t, c, "refresh_cache", at(9, 5), 0)
	}
	want := []string{"backup_database", "send_email", "refresh_cache"}

	c, rec := eventClient(t)
	defer stopGracefully(t, c)
	enqueue(c)
	expectRan(t, c, at(10, 0), 3)
	if got := rec.get(); !slices.Equal(got, want) {
		t.Errorf("all due at once: got %v, want %v", got, want)
	}

	c2, rec2 := eventClient(t)
	defer stopGracefully(t, c2)
	enqueue(c2)
	for _, s := range []struct {
		h, m, want int
	}{{1, 59, 0}, {2, 0, 1}, {8, 59, 0}, {9, 0, 1}, {9, 4, 0}, {9, 5, 1}, {23, 0, 0}} {
		expectRan(t, c2, at(s.h, s.m), s.want)
	}
	if got := rec2.get(); !slices.Equal(got, want) {
		t.Errorf("stepping: got %v, want %v", got, want)
	}
}

// TestCancelledNeverRuns: a cancelled event never runs; cancelling it again
// or cancelling an unknown ID returns false.
func TestCancelledNeverRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rec := eventClient(t)
	defer stopGracefully(t, c)
	id := scheduleEvent(t, c, "send_email", farFuture.Add(10*time.Second), 0)
	scheduleEvent(t, c, "other", farFuture.Add(10*time.Second), 0)
	if ok, err := c.Cancel(ctx, id); !ok || err != nil {
		t.Fatalf("Cancel(pending): got %v, %v; want true, nil", ok, err)
	}
	runReadyCount(t, c, farFuture.Add(24*time.Hour))
	if got := rec.get(); !slices.Equal(got, []string{"other"}) {
		t.Errorf("ran %v, want [other]", got)
	}
	if st, err := c.Status(ctx, id); err != nil || st != hopper.StateCancelled {
		t.Errorf("Status: got %s (err %v), want cancelled", st, err)
	}
	for _, again := range []hopper.ID{id, 987654} { // already cancelled, unknown
		if ok, err := c.Cancel(ctx, again); ok || err != nil {
			t.Errorf("Cancel(%d): got %v, %v; want false, nil", again, ok, err)
		}
	}
}

// TestRescheduleLeavesNoStaleCopy: moving an event later leaves nothing at
// the old time, moving it earlier runs it earlier, and an event rescheduled
// twice runs exactly once (the seed's generation problem). The ID is kept.
func TestRescheduleLeavesNoStaleCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := dayAt
	c, rec := eventClient(t)
	defer stopGracefully(t, c)
	move := func(id hopper.ID, to time.Time) {
		if j, err := c.Reschedule(ctx, id, to, nil); err != nil || j.ID != id || !j.RunAt.Equal(to) {
			t.Fatalf("Reschedule(%d, %s): got %+v, %v", id, to.Format("15:04"), j, err)
		}
	}
	later := scheduleEvent(t, c, "later", at(9, 0), 0)
	move(later, at(10, 0))
	expectRan(t, c, at(9, 59), 0)
	expectRan(t, c, at(10, 0), 1)
	earlier := scheduleEvent(t, c, "earlier", at(14, 0), 0)
	move(earlier, at(12, 0))
	expectRan(t, c, at(12, 0), 1)
	twice := scheduleEvent(t, c, "twice", at(15, 0), 0)
	move(twice, at(15, 30))
	move(twice, at(15, 15))
	expectRan(t, c, at(15, 14), 0)
	expectRan(t, c, at(23, 0), 1)
	if got, want := rec.get(), []string{"later", "earlier", "twice"}; !slices.Equal(got, want) {
		t.Errorf("ran %v, want %v (each exactly once)", got, want)
	}
	if _, err := c.Reschedule(ctx, twice, at(23, 30), nil); !errors.Is(err, hopper.ErrNotWaiting) {
		t.Errorf("Reschedule of a finished job: got %v, want ErrNotWaiting", err)
	}
}

// TestFixedRateVsFixedDelay: a fixed-rate "every 5s" schedule whose
// job takes 2s fires at +5s, +10s, +15s (cadence kept); a fixed-delay 5s
// schedule with the same job fires 5s after each run finished: +5s, +12s,
// +19s. Fake time in a synctest bubble makes the durations exact.
func TestFixedRateVsFixedDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		created := time.Now() // the bubble's clock stands still until it blocks
		ctx := context.Background()
		var mu sync.Mutex
		starts := map[string][]time.Duration{} // offsets from the creation
		ws := hopper.NewWorkers()
		for _, kind := range []string{"rate", "delay"} {
			hopper.RegisterRaw(ws, kind, func(ctx context.Context, _ json.RawMessage) (any, error) {
				mu.Lock()
				starts[kind] = append(starts[kind], time.Since(created))
				if f := hopper.JobFromContext(ctx).FireTime; !f.Equal(time.Now()) {
					t.Errorf("%s: tick +%s started at +%s", kind, f.Sub(created), time.Since(created))
				}
				mu.Unlock()
				time.Sleep(2 * time.Second)
				return nil, nil
			}, nil)
		}
		c := silentClient(t, hopper.Config{Workers: ws})
		for name, o := range map[string]hopper.ScheduleOptions{
			"rate":  {Every: 5 * time.Second, Kind: "rate"},
			"delay": {Every: 5 * time.Second, FixedDelay: true, Kind: "delay"},
		} {
			if _, err := c.AddSchedule(ctx, name, o); err != nil {
				t.Fatalf("AddSchedule %s: %v", name, err)
			}
		}
		startClient(t, c)
		time.Sleep(21 * time.Second)
		synctest.Wait()
		stopGracefully(t, c)
		mu.Lock()
		defer mu.Unlock()
		for kind, want := range map[string][]time.Duration{
			"rate":  {5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second},
			"delay": {5 * time.Second, 12 * time.Second, 19 * time.Second},
		} {
			if got := starts[kind]; !slices.Equal(got, want) {
				t.Errorf("%s: runs started at %v after creation, want %v", kind, got, want)
			}
		}
	})
}

// TestCronWeekdaysAcrossDST: "0 9 * * 1-5" in Europe/Berlin fires at 09:00
// Berlin time on weekdays only, across the change to summer time, when
// stepped with FireSchedules and ProcessNext. The bubble only fixes the
// schedule's creation time (Saturday 2000-01-01 00:00 UTC); nothing runs by
// itself.
func TestCronWeekdaysAcrossDST(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatalf("LoadLocation: %v", err)
		}
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "report", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
		c := silentClient(t, hopper.Config{Workers: ws})
		defer stopGracefully(t, c)
		sc, err := c.AddSchedule(ctx, "weekday-report", hopper.ScheduleOptions{
			Cron: "0 9 * * 1-5", TimeZone: "Europe/Berlin", Kind: "report",
		})
		if err != nil {
			t.Fatalf("AddSchedule: %v", err)
		}
		first := time.Date(2000, 1, 3, 9, 0, 0, 0, berlin) // Monday
		if !sc.NextRunAt.Equal(first) {
			t.Fatalf("first tick: got %s, want %s", sc.NextRunAt, first)
		}
		if next := c.FireSchedules(ctx, first.Add(-time.Minute)); !next.Equal(first) {
			t.Errorf("FireSchedules a minute early returned %s, want %s", next, first)
		}
		expectRan(t, c, first.Add(-time.Minute), 0)
		var fired []time.Time
		at := first
		for at.Before(time.Date(2000, 3, 29, 0, 0, 0, 0, berlin)) {
			next := c.FireSchedules(ctx, at)
			j, ok, err := c.ProcessNext(ctx, at)
			if err != nil || !ok {
				t.Fatalf("ProcessNext at %s: got %v, %v; want a fired job", at, ok, err)
			}
			fired = append(fired, j.FireTime)
			if !next.After(at) {
				t.Fatalf("next tick %s is not after %s", next, at)
			}
			at = next
		}
		for _, f := range fired {
			l := f.In(berlin)
			if wd := l.Weekday(); wd == time.Saturday || wd == time.Sunday || l.Hour() != 9 || l.Minute() != 0 {
				t.Errorf("fired at %s, want 09:00 on a weekday", l.Format(time.RFC1123))
			}
		}
		// Every tick is a weekday at 09:00, strictly increasing, and there
		// are as many as weekdays: each weekday fired once, weekends never.
		// 2000-03-26 was the change to CEST: 09:00 on 28 March is 07:00 UTC.
		if last, want := fired[len(fired)-1], time.Date(2000, 3, 28, 7, 0, 0, 0, time.UTC); !last.Equal(want) {
			t.Errorf("last tick: got %s, want %s", last.UTC(), want)
		}
		if len(fired) != 62 { // the weekdays from 3 January to 28 March 2000
			t.Errorf("fired %d times, want 62", len(fired))
		}
	})
}

// TestRetryListDelaysExact: the seed's 5s, 30s, 300s retry list, then a
// permanent failure. List delays are exact: jitter applies only to the
// exponential strategy, even when the policy asks for full jitter.
func TestRetryListDelaysExact(t *testing.T) {
	t.Parallel()
	p := backoff.List(5*time.Second, 30*time.Second, 300*time.Second)
	p.Jitter = backoff.JitterFull
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "flaky", func(context.Context, json.RawMessage) (any, error) {
		return nil, errors.New("unavailable")
	}, &hopper.EnqueueOptions{MaxAttempts: 4, Retry: &p})
	c := silentClient(t, hopper.Config{Workers: ws})
	defer stopGracefully(t, c)
	if _, err := c.Enqueue(context.Background(), "flaky", nil, nil); err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	now := farFuture
	for _, want := range []time.Duration{5 * time.Second, 30 * time.Second, 300 * time.Second} {
		j, ok, err := c.ProcessNext(context.Background(), now)
		if err != nil || !ok || j.State != hopper.StateRetrying {
			t.Fatalf("ProcessNext at %s: got %v, %v", now, ok, err)
		}
		if got := j.RunAt.Sub(now); got != want {
			t.Errorf("retry after attempt %d: waits %s, want %s", j.Attempt, got, want)
		}
		if _, ok, _ := c.ProcessNext(context.Background(), j.RunAt.Add(-time.Nanosecond)); ok {
			t.Errorf("the retry ran before its delay of %s", want)
		}
		now = j.RunAt
	}
	j, ok, err := c.ProcessNext(context.Background(), now)
	if err != nil || !ok || j.State != hopper.StateDead || j.Attempt != 4 {
		t.Fatalf("last attempt: got %+v, %v, %v; want dead after 4 attempts", j, ok, err)
	}
}

// fakeClock is the seed's FakeClock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func (c *fakeClock) time() time.Time         { return c.now }

// TestDueOnceClockAdvances is the seed's fake-clock test: an event at t+10s is not
// due at t and is due once the clock has advanced 10s.
func TestDueOnceClockAdvances(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: farFuture}
	c, rec := eventClient(t)
	defer stopGracefully(t, c)
	scheduleEvent(t, c, "send_email", clock.time().Add(10*time.Second), 0)
	expectRan(t, c, clock.time(), 0)
	clock.advance(10 * time.Second)
	expectRan(t, c, clock.time(), 1)
	if got := rec.get(); !slices.Equal(got, []string{"send_email"}) {
		t.Errorf("ran %v, want [send_email]", got)
	}
}

// TestSameTimeByPriorityThenFIFO: among events due at the same time, the
// lower priority number runs first, and equal priorities run in insertion
// order (stable tie-breaking).
func TestSameTimeByPriorityThenFIFO(t *testing.T) {
	t.Parallel()
	c, rec := eventClient(t)
	defer stopGracefully(t, c)
	at := farFuture.Add(time.Hour)
	for i, prio := range []int{1, 0, 1, 0, 1} {
		scheduleEvent(t, c, string(rune('a'+i)), at, prio)
	}
	expectRan(t, c, at, 5)
	if got, want := rec.get(), []string{"b", "d", "a", "c", "e"}; !slices.Equal(got, want) {
		t.Errorf("order: got %v, want %v", got, want)
	}
}

// TestEarlierEnqueueWakesScheduler is the seed's "concurrent insertion"
// bug: a running scheduler that sleeps until its next event (10 minutes
// away) must wake for an earlier event inserted meanwhile (due in 1s), and
// an idle one, with nothing to wait for, must wake for a new delayed event.
func TestEarlierEnqueueWakesScheduler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := silentClient(t, hopper.Config{})
		startClient(t, c)
		synctest.Wait() // the pool is idle, with nothing waiting
		t0 := time.Now()
		_, late := enqueueTimed(t, c, t0, &hopper.EnqueueOptions{Delay: 10 * time.Minute})
		synctest.Wait()
		_, early := enqueueTimed(t, c, t0, &hopper.EnqueueOptions{Delay: time.Second})
		if got := early(); got != time.Second {
			t.Errorf("event due in 1s, inserted while the scheduler slept: ran at +%s, want +1s", got)
		}
		if got := late(); got != 10*time.Minute {
			t.Errorf("event due in 10m, inserted into an idle scheduler: ran at +%s, want +10m", got)
		}
		stopGracefully(t, c)
	})
}

// TestRescheduleEarlierWakesScheduler: on a running client, moving a
// waiting job earlier makes it run at its new time, not its old one.
func TestRescheduleEarlierWakesScheduler(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := silentClient(t, hopper.Config{})
		startClient(t, c)
		t0 := time.Now()
		id, ran := enqueueTimed(t, c, t0, &hopper.EnqueueOptions{Delay: 30 * time.Minute})
		synctest.Wait() // the scheduler sleeps until +30m
		if _, err := c.Reschedule(context.Background(), id, t0.Add(5*time.Second), nil); err != nil {
			t.Fatalf("Reschedule: %v", err)
		}
		if got := ran(); got != 5*time.Second {
			t.Errorf("rescheduled from +30m to +5s: ran at +%s, want +5s", got)
		}
		stopGracefully(t, c)
	})
}
