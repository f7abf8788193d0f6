package hopper_test

// Seed 004: "Low-Level Design: Task Scheduler": one-shot tasks after a delay,
// recurring tasks, cancellation before firing, priority when the pool is
// saturated, and retries with exponential backoff. The seed's priority is
// "higher = more urgent"; Hopper runs the LOWER number first, so a seed
// priority p is enqueued as Priority -p. Every test runs a started client in
// a synctest bubble, where time.Sleep only advances fake time.

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

// seed004Times records the fake times at which handlers start.
type seed004Times struct {
	mu sync.Mutex
	at []time.Time
}

func (r *seed004Times) mark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.at = append(r.at, time.Now())
}

// since returns the recorded times as offsets from t0.
func (r *seed004Times) since(t0 time.Time) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]time.Duration, len(r.at))
	for i, a := range r.at {
		out[i] = a.Sub(t0)
	}
	return out
}

func seed004Start(t *testing.T, cfg hopper.Config) *hopper.Client {
	t.Helper()
	c := seedClient(t, cfg)
	seedStart(t, c)
	return c
}

// seed004Once schedules a closure after delay on c (starting c if it is not
// yet) and checks that it runs once, delay after t0, when it was scheduled.
func seed004Once(t *testing.T, c *hopper.Client, t0 time.Time, delay time.Duration) {
	t.Helper()
	var times seed004Times
	id := seedFunc(t, c, func(context.Context) (any, error) {
		times.mark()
		return "Hello!", nil
	}, &hopper.EnqueueOptions{Delay: delay})
	seedStart(t, c)
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

// seedTimed enqueues, on a started client, a closure that records when it
// ran, and returns its ID and a function that waits for it (at most an hour
// of fake time) and reports that time as an offset from t0 (-1: never ran).
func seedTimed(t *testing.T, c *hopper.Client, t0 time.Time, opts *hopper.EnqueueOptions) (hopper.ID, func() time.Duration) {
	t.Helper()
	var mu sync.Mutex
	var ran time.Time
	id := seedFunc(t, c, func(context.Context) (any, error) {
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

// TestSeed004OnceAfterDelay: as in the seed, the scheduler is started (and
// idle) first, then schedule_once(func, delay=5) runs once, 5s later.
func TestSeed004OnceAfterDelay(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := seed004Start(t, hopper.Config{})
		synctest.Wait() // the pool is idle
		seed004Once(t, c, time.Now(), 5*time.Second)
		seedStop(t, c)
	})
}

// TestSeed004OnceAfterDelayScheduledBeforeStart: the same task scheduled
// before the pool starts runs once, 5s after it was scheduled.
func TestSeed004OnceAfterDelayScheduledBeforeStart(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := seedClient(t, hopper.Config{})
		seed004Once(t, c, time.Now(), 5*time.Second)
		seedStop(t, c)
	})
}

// TestSeed004Recurring: schedule_recurring(func, interval=60, priority=10)
// fires every 60s. Hopper's fixed-rate schedule keeps the cadence from its
// creation (the seed's own implementation drifts: next = now + interval).
func TestSeed004Recurring(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		var times seed004Times
		var prios []int
		hopper.RegisterRaw(ws, "heartbeat", func(ctx context.Context, _ json.RawMessage) (any, error) {
			times.mark()
			times.mu.Lock()
			prios = append(prios, hopper.JobFromContext(ctx).Priority)
			times.mu.Unlock()
			time.Sleep(3 * time.Second)
			return nil, nil
		}, nil)
		c := seed004Start(t, hopper.Config{Workers: ws, Concurrency: 1})
		t0 := time.Now()
		if _, err := c.AddSchedule(ctx, "heartbeat", hopper.ScheduleOptions{
			Every: 60 * time.Second, Kind: "heartbeat", Options: &hopper.EnqueueOptions{Priority: -10},
		}); err != nil {
			t.Fatalf("AddSchedule: %v", err)
		}
		time.Sleep(4*time.Minute + time.Second)
		synctest.Wait()
		seedStop(t, c)
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

// TestSeed004CancelBeforeFiring: a task cancelled before its delay is over
// never runs. The seed's cancel always returns True (lazy deletion); Hopper
// returns true only for a job that was waiting (or running), and false once
// it is finished, including after an earlier cancel.
func TestSeed004CancelBeforeFiring(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := seed004Start(t, hopper.Config{})
		var times seed004Times
		id := seedFunc(t, c, func(context.Context) (any, error) {
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
		seedStop(t, c)
	})
}

// TestSeed004PriorityWhenSaturated: with the only worker busy on a long job,
// a low-priority job (seed 1 → -1) then a high-priority one (seed 10 → -10)
// are enqueued; when the worker frees up, the high one runs next.
func TestSeed004PriorityWhenSaturated(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c := seed004Start(t, hopper.Config{Concurrency: 1})
		var rec seedRecorder
		long := seedFunc(t, c, func(context.Context) (any, error) {
			rec.add("long")
			time.Sleep(10 * time.Second)
			return nil, nil
		}, nil)
		synctest.Wait() // the worker is busy
		low := seedFunc(t, c, seedRecord(&rec, "low"), &hopper.EnqueueOptions{Priority: -1})
		high := seedFunc(t, c, seedRecord(&rec, "high"), &hopper.EnqueueOptions{Priority: -10})
		synctest.Wait()
		if got := rec.get(); !slices.Equal(got, []string{"long"}) {
			t.Fatalf("while saturated, ran %v, want only [long]", got)
		}
		for _, id := range []hopper.ID{long, low, high} {
			seedWait(t, c, id)
		}
		if got, want := rec.get(), []string{"long", "high", "low"}; !slices.Equal(got, want) {
			t.Errorf("order: got %v, want %v", got, want)
		}
		seedStop(t, c)
	})
}

// TestSeed004RetryExponential: a failing task retries up to max_retries=3
// times (4 attempts) with the seed's backoff of 2^retry_count seconds: 2s,
// 4s, 8s, then fails for good (dead).
func TestSeed004RetryExponential(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		p := backoff.Exponential(2*time.Second, time.Hour)
		p.Jitter = backoff.JitterNone // the seed's formula has no jitter
		c := seed004Start(t, hopper.Config{Defaults: hopper.EnqueueOptions{Retry: &p}})
		var times seed004Times
		t0 := time.Now()
		id := seedFunc(t, c, func(context.Context) (any, error) {
			times.mark()
			return nil, errors.New("boom")
		}, &hopper.EnqueueOptions{MaxAttempts: 1 + 3})
		j := seedWait(t, c, id)
		want := []time.Duration{0, 2 * time.Second, 6 * time.Second, 14 * time.Second}
		if got := times.since(t0); !slices.Equal(got, want) {
			t.Errorf("attempts at %v, want %v", got, want)
		}
		if j.State != hopper.StateDead || j.Attempt != 4 {
			t.Errorf("got state %s after %d attempts, want dead after 4", j.State, j.Attempt)
		}
		seedStop(t, c)
	})
}

// TestSeed004CrashedWorkerRescued is the seed's follow-up "prevent a task
// from running twice if the scheduler crashes mid-execution" (and seed 000's
// follow-up 8): a task stuck running under a dead worker is given back once
// its lease expires and runs again, at least once, on a live client.
func TestSeed004CrashedWorkerRescued(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := memstore.New()
		c := seedClient(t, hopper.Config{Store: st})
		id := seedFunc(t, c, seedRecord(new(seedRecorder), "ok"), nil)
		t0 := time.Now()
		seedCrash(t, st, 30*time.Second)
		seedStart(t, c)
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
		seedStop(t, c)
	})
}

// TestSeed004LongerThanInterval is the seed's follow-up "a task that runs
// longer than its interval": an every-5s schedule whose job takes 7s skips
// the ticks that come while it runs (OverlapSkip, the default: +5s, +15s,
// +25s), or with OverlapAllow starts every tick anyway, overlapping.
func TestSeed004LongerThanInterval(t *testing.T) {
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
			var times seed004Times
			hopper.RegisterRaw(ws, "slow", func(context.Context, json.RawMessage) (any, error) {
				times.mark()
				time.Sleep(7 * time.Second)
				return nil, nil
			}, nil)
			c := seed004Start(t, hopper.Config{Workers: ws})
			t0 := time.Now()
			tc.opts.Every, tc.opts.Kind = 5*time.Second, "slow"
			if _, err := c.AddSchedule(context.Background(), "slow", tc.opts); err != nil {
				t.Fatalf("AddSchedule: %v", err)
			}
			time.Sleep(29 * time.Second)
			seedStop(t, c)
			if got := times.since(t0); !slices.Equal(got, tc.want) {
				t.Errorf("overlap %s: runs started at %v, want %v", tc.opts.Overlap, got, tc.want)
			}
		})
	}
}
