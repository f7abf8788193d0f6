package hopper_test

// Tests of a started client in fake time: one-shot jobs after a delay,
// recurring schedules, cancellation before the delay ends, priority when
// the pool is saturated, retries with exponential backoff, a crashed
// worker's job rescued, and a job longer than its schedule's interval.
// They replay the design document "Low-Level Design: Task Scheduler" (seed
// 004 of docs/architecture.md). The seed's priority is "higher = more
// urgent"; Hopper runs the LOWER number first, so a seed priority p is
// enqueued as Priority -p. Every test runs a started client in a synctest
// bubble, where time.Sleep only advances fake time.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/store/memstore"
)

// startTimes records the fake times at which handlers start.
type startTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (r *startTimes) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, time.Now())
}

// since returns the recorded times as offsets from t0.
func (r *startTimes) since(t0 time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, len(r.at))
	for i, a := range r.at {
		out[i] = a.Sub(t0)
	}
	return out
}

func startedClient(t *testing.T, cfg hopper.Config) *hopper.Client {
	t.Helper()
	c := silentClient(t, cfg)
	startClient(t, c)
	return c
}

// checkOnceAfterDelay schedules a closure after delay on c (starting c if it is not
// yet) and checks that it runs once, delay after t0, when it was scheduled.
func checkOnceAfterDelay(t *testing.T, c *hopper.Client, t0 time.Time, delay time.Duration) {
	t.Helper()
	var times startTimes
	id := enqueueFunc(t, c, func(context.Context) (any, error) {
		times.mark()
		return "Hello!", nil
	}, &hopper.EnqueueOptions{Delay: delay})
	startClient(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	j, err := c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("the task never ran: still %s after an hour (%v)", j.State, err)
	}
	time.Sleep(time.Minute)
	if got, want := times.since(t0), []time.Duration{delay}; !slices.Equal(got, want) {
		t.Errorf("runs at %v, want %v", got, want)
	}
	if j.State != hopper.StateCompleted || string(j.Result) != `"Hello!"` {
		t.Errorf("got state %s result %s, want completed \"Hello!\"", j.State, j.Result)
	}
}

// enqueueTimed enqueues, on a started client, a closure that records when it
// ran, and returns its ID and a function that waits for it (at most an hour
// of fake time) and reports that time as an offset from t0 (-1: never ran).
func enqueueTimed(t *testing.T, c *hopper.Client, t0 time.Time, opts *hopper.EnqueueOptions) (hopper.ID, func() time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var ran time.Time
	id := enqueueFunc(t, c, func(context.Context) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = time.Now()
		return nil, nil
	}, opts)
	return id, func() time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		if j, err := c.Wait(ctx, id); err != nil {
			t.Errorf("job %d never ran: still %s after an hour (%v)", id, j.State, err)
			return -1
		}
		mu.Lock()
		defer mu.Unlock()
		return ran.Sub(t0)
	}
}

// TestDelayedJobRunsOnceAfterDelay: as in the seed, the scheduler is started (and
// idle) first, then schedule_once(func, delay=5) runs once, 5s later.
func TestDelayedJobRunsOnceAfterDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := startedClient(t, hopper.Config{})
		synctest.Wait() // the pool is idle
		checkOnceAfterDelay(t, c, time.Now(), 5*time.Second)
		stopGracefully(t, c)
	})
}

// TestDelayedJobEnqueuedBeforeStart: the same task scheduled
// before the pool starts runs once, 5s after it was scheduled.
func TestDelayedJobEnqueuedBeforeStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := silentClient(t, hopper.Config{})
		checkOnceAfterDelay(t, c, time.Now(), 5*time.Second)
		stopGracefully(t, c)
	})
}

// TestIntervalScheduleKeepsCadence: schedule_recurring(func, interval=60, priority=10)
// fires every 60s. Hopper's fixed-rate schedule keeps the cadence from its
// creation (the seed's own implementation drifts: next = now + interval).
func TestIntervalScheduleKeepsCadence(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		var times startTimes
		var prios []int
		hopper.RegisterRaw(ws, "heartbeat", func(ctx context.Context, _ json.RawMessage) (any, error) {
			times.mark()
			times.mu.Lock()
			prios = append(prios, hopper.JobFromContext(ctx).Priority)
			times.mu.Unlock()
			time.Sleep(3 * time.Second)
			return nil, nil
		}, nil)
		c := startedClient(t, hopper.Config{Workers: ws, Concurrency: 1})
		t0 := time.Now()
		if _, err := c.AddSchedule(ctx, "heartbeat", hopper.ScheduleOptions{
			Every: 60 * time.Second, Kind: "heartbeat", Options: &hopper.EnqueueOptions{Priority: -10},
		}); err != nil {
			t.Fatalf("AddSchedule: %v", err)
		}
		time.Sleep(4*time.Minute + time.Second)
		synctest.Wait()
		stopGracefully(t, c)
		want := []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute}
		if got := times.since(t0); !slices.Equal(got, want) {
			t.Errorf("firings at %v, want %v", got, want)
		}
		for _, p := range prios {
			if p != -10 {
				t.Errorf("fired job priority %d, want -10 (seed priority 10)", p)
			}
		}
	})
}

// TestCancelBeforeDelayEnds: a task cancelled before its delay is over
// never runs. The seed's cancel always returns True (lazy deletion); Hopper
// returns true only for a job that was waiting (or running), and false once
// it is finished, including after an earlier cancel.
func TestCancelBeforeDelayEnds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := startedClient(t, hopper.Config{})
		var times startTimes
		id := enqueueFunc(t, c, func(context.Context) (any, error) {
			times.mark()
			return nil, nil
		}, &hopper.EnqueueOptions{Delay: 5 * time.Second})
		time.Sleep(time.Second)
		if ok, err := c.Cancel(ctx, id); !ok || err != nil {
			t.Fatalf("Cancel: got %v, %v; want true, nil", ok, err)
		}
		time.Sleep(time.Minute)
		if got := times.since(time.Now()); len(got) != 0 {
			t.Errorf("the cancelled task ran %d times", len(got))
		}
		if st, err := c.Status(ctx, id); err != nil || st != hopper.StateCancelled {
			t.Errorf("Status: %s (err %v), want cancelled", st, err)
		}
		if ok, err := c.Cancel(ctx, id); ok || err != nil {
			t.Errorf("second Cancel: got %v, %v; want false, nil (the seed would say true)", ok, err)
		}
		stopGracefully(t, c)
	})
}

// TestPriorityWhenPoolSaturated: with the only worker busy on a long job,
// a low-priority job (seed 1 → -1) then a high-priority one (seed 10 → -10)
// are enqueued; when the worker frees up, the high one runs next.
func TestPriorityWhenPoolSaturated(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := startedClient(t, hopper.Config{Concurrency: 1})
		var rec recorder
		long := enqueueFunc(t, c, func(context.Context) (any, error) {
			rec.add("long")
			time.Sleep(10 * time.Second)
			return nil, nil
		}, nil)
		synctest.Wait() // the worker is busy
		low := enqueueFunc(t, c, recordAs(&rec, "low"), &hopper.EnqueueOptions{Priority: -1})
		high := enqueueFunc(t, c, recordAs(&rec, "high"), &hopper.EnqueueOptions{Priority: -10})
		synctest.Wait()
		if got := rec.get(); !slices.Equal(got, []string{"long"}) {
			t.Fatalf("while saturated, ran %v, want only [long]", got)
		}
		for _, id := range []hopper.ID{long, low, high} {
			waitDone(t, c, id)
		}
		if got, want := rec.get(), []string{"long", "high", "low"}; !slices.Equal(got, want) {
			t.Errorf("order: got %v, want %v", got, want)
		}
		stopGracefully(t, c)
	})
}

// TestRetryExponentialOnStartedClient: a failing task retries up to max_retries=3
// times (4 attempts) with the seed's backoff of 2^retry_count seconds: 2s,
// 4s, 8s, then fails for good (dead).
func TestRetryExponentialOnStartedClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := backoff.Exponential(2*time.Second, time.Hour)
		p.Jitter = backoff.JitterNone // the seed's formula has no jitter
		c := startedClient(t, hopper.Config{Defaults: hopper.EnqueueOptions{Retry: &p}})
		var times startTimes
		t0 := time.Now()
		id := enqueueFunc(t, c, func(context.Context) (any, error) {
			times.mark()
			return nil, errors.New("boom")
		}, &hopper.EnqueueOptions{MaxAttempts: 1 + 3})
		j := waitDone(t, c, id)
		want := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second}
		if got := times.since(t0); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		if j.State != hopper.StateDead || j.Attempt != 4 {
			t.Errorf("got state %s after %d attempts, want dead after 4", j.State, j.Attempt)
		}
		stopGracefully(t, c)
	})
}

// TestCrashedWorkerJobRescued is the seed's follow-up "prevent a task
// from running twice if the scheduler crashes mid-execution" (and seed 000's
// follow-up 8): a task stuck running under a dead worker is given back once
// its lease expires and runs again, at least once, on a live client.
func TestCrashedWorkerJobRescued(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		c := silentClient(t, hopper.Config{Store: st})
		id := enqueueFunc(t, c, recordAs(new(recorder), "ok"), nil)
		t0 := time.Now()
		crashMidJob(t, st, 30*time.Second)
		startClient(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		j, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatalf("the crashed job never ran again: still %s after an hour (%v)", j.State, err)
		}
		// The lease ran out at +30s; the rescuer, every 10s, saw it at +40s.
		if took := time.Since(t0); took != 40*time.Second {
			t.Errorf("rerun finished at +%s, want +40s", took)
		}
		if j.State != hopper.StateCompleted || j.Attempt != 2 || len(j.Attempts) != 2 || j.Attempts[0].Outcome != "interrupted" {
			t.Errorf("got %s attempt %d history %+v, want completed as attempt 2 after an interrupted one", j.State, j.Attempt, j.Attempts)
		}
		stopGracefully(t, c)
	})
}

// TestJobLongerThanInterval is the seed's follow-up "a task that runs
// longer than its interval": an every-5s schedule whose job takes 7s skips
// the ticks that come while it runs (OverlapSkip, the default: +5s, +15s,
// +25s), or with OverlapAllow starts every tick anyway, overlapping.
func TestJobLongerThanInterval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts hopper.ScheduleOptions
		want []time.Duration
	}{
		{hopper.ScheduleOptions{Overlap: hopper.OverlapSkip},
			[]time.Duration{5 * time.Second, 15 * time.Second, 25 * time.Second}},
		{hopper.ScheduleOptions{Overlap: hopper.OverlapAllow},
			[]time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second, 25 * time.Second}},
	} {
		synctest.Test(t, func(t *testing.T) {
			ws := hopper.NewWorkers()
			var times startTimes
			hopper.RegisterRaw(ws, "slow", func(context.Context, json.RawMessage) (any, error) {
				times.mark()
				time.Sleep(7 * time.Second)
				return nil, nil
			}, nil)
			c := startedClient(t, hopper.Config{Workers: ws})
			t0 := time.Now()
			tc.opts.Every, tc.opts.Kind = 5*time.Second, "slow"
			if _, err := c.AddSchedule(context.Background(), "slow", tc.opts); err != nil {
				t.Fatalf("AddSchedule: %v", err)
			}
			time.Sleep(29 * time.Second)
			stopGracefully(t, c)
			if got := times.since(t0); !slices.Equal(got, tc.want) {
				t.Errorf("overlap %s: runs started at %v, want %v", tc.opts.Overlap, got, tc.want)
			}
		})
	}
}
