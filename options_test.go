package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

// TestOptionPrecedence: every path that makes a job — Enqueue, EnqueueMany
// and a schedule's tick — takes each option from the job, else its kind,
// else Config.Defaults, else Hopper's defaults.
func TestOptionPrecedence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	noop := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	hopper.RegisterRaw(ws, "report", noop, &hopper.EnqueueOptions{Queue: "reports", MaxAttempts: 3, Priority: 7})
	hopper.RegisterRaw(ws, "plain", noop, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet, Defaults: hopper.EnqueueOptions{MaxAttempts: 9}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	type want struct {
		queue         string
		attempts, pri int
	}
	check := func(what string, id hopper.ID, w want) {
		t.Helper()
		j, err := c.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Queue != w.queue || j.MaxAttempts != w.attempts || j.Priority != w.pri {
			t.Errorf("%s: queue %q attempts %d priority %d, want %q %d %d", what, j.Queue, j.MaxAttempts, j.Priority, w.queue, w.attempts, w.pri)
		}
	}
	check("kind's options", enqueue(t, c, "report", nil, nil), want{"reports", 3, 7})
	check("job's own options", enqueue(t, c, "report", nil, &hopper.EnqueueOptions{Queue: "urgent", MaxAttempts: 1, Priority: -1}), want{"urgent", 1, -1})
	check("Config.Defaults", enqueue(t, c, "plain", nil, nil), want{"default", 9, 0})
	// Priority 0 over the kind's 7: Priority(0), the explicit zero.
	check("job's explicit zero", enqueue(t, c, "report", nil, &hopper.EnqueueOptions{Priority: hopper.Priority(0)}), want{"reports", 3, 0})
	res, err := c.EnqueueMany(ctx, []hopper.EnqueueRequest{{Kind: "report"}})
	if err != nil {
		t.Fatal(err)
	}
	check("EnqueueMany", res[0].ID, want{"reports", 3, 7})

	for name, o := range map[string]*hopper.EnqueueOptions{
		"kind":  nil,
		"own":   {Queue: "cron", MaxAttempts: 2},
		"zero":  {Priority: hopper.Priority(0)},
		"plain": nil,
	} {
		kind := "report"
		if name == "plain" {
			kind = "plain"
		}
		if _, err := c.AddSchedule(ctx, name, hopper.ScheduleOptions{Every: time.Minute, Kind: kind, Options: o}); err != nil {
			t.Fatal(err)
		}
	}
	c.FireSchedules(ctx, time.Now().Add(2*time.Minute))
	for name, w := range map[string]want{"kind": {"reports", 3, 7}, "own": {"cron", 2, 7}, "zero": {"reports", 3, 0}, "plain": {"default", 9, 0}} {
		sc, err := c.GetSchedule(ctx, name)
		if err != nil || sc.LastJobID == 0 {
			t.Fatalf("schedule %s did not fire: %v", name, err)
		}
		check("schedule "+name, sc.LastJobID, w)
		j, _ := c.Get(ctx, sc.LastJobID)
		if j.Timeout != hopper.MinScheduledTimeout {
			t.Errorf("schedule %s: timeout %s, want the one-minute period raised to MinScheduledTimeout", name, j.Timeout)
		}
	}
}

// TestScheduledJobTimeoutDefault: a fired job without a timeout gets its
// schedule's period, at least MinScheduledTimeout; a timeout set anywhere
// wins.
func TestScheduledJobTimeoutDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	noop := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	hopper.RegisterRaw(ws, "k", noop, nil)
	hopper.RegisterRaw(ws, "timed", noop, &hopper.EnqueueOptions{Timeout: time.Second})
	c, _ := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
	defer c.StopNow()
	c.AddSchedule(ctx, "hourly", hopper.ScheduleOptions{Cron: "@hourly", Kind: "k"})
	c.AddSchedule(ctx, "kind-timeout", hopper.ScheduleOptions{Cron: "@hourly", Kind: "timed"})
	c.AddSchedule(ctx, "own-timeout", hopper.ScheduleOptions{Cron: "@hourly", Kind: "k", Options: &hopper.EnqueueOptions{Timeout: 5 * time.Second}})
	c.AddSchedule(ctx, "no-timeout", hopper.ScheduleOptions{Cron: "@hourly", Kind: "timed", Options: &hopper.EnqueueOptions{Timeout: hopper.NoTimeout}})
	c.FireSchedules(ctx, time.Now().Add(2*time.Hour))
	for name, want := range map[string]time.Duration{"hourly": time.Hour, "kind-timeout": 0, "own-timeout": 5 * time.Second, "no-timeout": hopper.NoTimeout} {
		sc, _ := c.GetSchedule(ctx, name)
		j, err := c.Get(ctx, sc.LastJobID)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if j.Timeout != want {
			t.Errorf("%s: stored timeout %s, want %s (0: the kind's, resolved when it runs)", name, j.Timeout, want)
		}
	}
}

// TestEmptySelectionsNeverMeanAll: RetryDead and PurgeDead with no IDs fail
// and change nothing; the "all" forms are separate calls.
func TestEmptySelectionsNeverMeanAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "fail", func(context.Context, json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no"))
	}, nil)
	c, _ := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
	defer c.StopNow()
	enqueue(t, c, "fail", nil, nil)
	enqueue(t, c, "fail", nil, nil)
	c.RunReady(ctx, time.Now())
	var fe *hopper.FieldError
	var none []hopper.ID
	if n, err := c.RetryDead(ctx, none...); !errors.As(err, &fe) || n != 0 {
		t.Errorf("RetryDead(no IDs) = %d, %v; want a FieldError", n, err)
	}
	if n, err := c.PurgeDead(ctx, none...); !errors.As(err, &fe) || n != 0 {
		t.Errorf("PurgeDead(no IDs) = %d, %v; want a FieldError", n, err)
	}
	if n, err := c.PurgeDeadOlderThan(ctx, 0); !errors.As(err, &fe) || n != 0 {
		t.Errorf("PurgeDeadOlderThan(0) = %d, %v; want a FieldError", n, err)
	}
	if n, _ := c.Count(ctx, hopper.ListOptions{States: []hopper.State{hopper.StateDead}}); n != 2 {
		t.Fatalf("dead jobs after refused calls: %d, want 2", n)
	}
	if n, err := c.RetryAllDead(ctx); n != 2 || err != nil {
		t.Errorf("RetryAllDead = %d, %v; want 2", n, err)
	}
	c.RunReady(ctx, time.Now())
	if n, err := c.PurgeAllDead(ctx); n != 2 || err != nil {
		t.Errorf("PurgeAllDead = %d, %v; want 2", n, err)
	}
}

// TestInputLimits: times a store cannot keep, oversized or non-UTF-8 args,
// and out-of-range configuration are refused, naming the field.
func TestInputLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := hopper.NewClient(hopper.Config{Logger: quiet})
	defer c.StopNow()
	far := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		what  string
		args  any
		o     *hopper.EnqueueOptions
		field string
	}{
		{"run-at past 2200", nil, &hopper.EnqueueOptions{RunAt: far}, "run_at"},
		{"delay of 250 years", nil, &hopper.EnqueueOptions{Delay: 250 * 365 * 24 * time.Hour}, "run_at"},
		{"args over 1 MiB", json.RawMessage(`"` + strings.Repeat("a", 1<<20) + `"`), nil, "args"},
		{"args not UTF-8", json.RawMessage("\"\xff\""), nil, "args"},
		{"base above max", nil, &hopper.EnqueueOptions{Retry: &backoff.Policy{Base: time.Hour, Max: time.Second}}, "retry.base"},
	} {
		_, err := c.Enqueue(ctx, "k", tc.args, tc.o)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: got %v, want a FieldError on %s", tc.what, err, tc.field)
		}
	}
	id := enqueue(t, c, "k", nil, &hopper.EnqueueOptions{Delay: time.Hour})
	var fe *hopper.FieldError
	if _, err := c.Reschedule(ctx, id, far, nil); !errors.As(err, &fe) || fe.Field != "run_at" {
		t.Errorf("Reschedule to 2300: got %v, want a FieldError on run_at", err)
	}
	if j, _ := c.Get(ctx, id); j.RunAt.Year() > 2200 || j.RunAt.Year() < 2000 {
		t.Errorf("after a refused reschedule: run-at %v", j.RunAt)
	}
	for _, tc := range []struct {
		cfg   hopper.Config
		field string
	}{
		{hopper.Config{Concurrency: 1_000_000}, "Config.Concurrency"},
		{hopper.Config{RescueInterval: -time.Second}, "Config.RescueInterval"},
		{hopper.Config{LeaseDuration: -time.Second}, "Config.LeaseDuration"},
		{hopper.Config{Defaults: hopper.EnqueueOptions{Delay: time.Second}}, "Config.Defaults.delay"},
		{hopper.Config{Defaults: hopper.EnqueueOptions{MaxAttempts: -1}}, "Config.Defaults.max_attempts"},
	} {
		if _, err := hopper.NewClient(tc.cfg); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("NewClient(%+v): got %v, want a FieldError on %s", tc.cfg, err, tc.field)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "per job") {
			t.Errorf("Register with a per-job option: got panic %v", r)
		}
	}()
	hopper.RegisterRaw(hopper.NewWorkers(), "k", nil, &hopper.EnqueueOptions{UniqueKey: "u"})
}

// TestIntegerBounds: max attempts and priorities beyond the bounds every
// store keeps are refused wherever they are given — a job's options, a
// batch, a kind's options, Config.Defaults, a schedule, Reschedule —
// naming the field, and the bounds themselves are taken.
func TestIntegerBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := hopper.NewClient(hopper.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	for _, tc := range []struct {
		o     hopper.EnqueueOptions
		field string
	}{
		{hopper.EnqueueOptions{MaxAttempts: hopper.MaxAttemptsLimit + 1}, "max_attempts"},
		{hopper.EnqueueOptions{MaxAttempts: 1000 * hopper.MaxAttemptsLimit}, "max_attempts"},
		{hopper.EnqueueOptions{Priority: hopper.MaxPriority + 1}, "priority"},
		{hopper.EnqueueOptions{Priority: hopper.MinPriority - 1}, "priority"},
	} {
		var fe *hopper.FieldError
		if _, err := c.Enqueue(ctx, "k", nil, &tc.o); !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Enqueue(%+v): got %v, want a FieldError on %s", tc.o, err, tc.field)
		}
		if _, err := c.EnqueueMany(ctx, []hopper.EnqueueRequest{{Kind: "k"}, {Kind: "k", Options: &tc.o}}); !errors.As(err, &fe) || !strings.HasSuffix(fe.Field, tc.field) {
			t.Errorf("EnqueueMany(%+v): got %v, want a FieldError on %s", tc.o, err, tc.field)
		}
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "k", Options: &tc.o}); !errors.As(err, &fe) || fe.Field != "options."+tc.field {
			t.Errorf("AddSchedule(%+v): got %v, want a FieldError on options.%s", tc.o, err, tc.field)
		}
		if _, err := hopper.NewClient(hopper.Config{Defaults: tc.o}); !errors.As(err, &fe) || fe.Field != "Config.Defaults."+tc.field {
			t.Errorf("NewClient(Defaults %+v): got %v, want a FieldError on Config.Defaults.%s", tc.o, err, tc.field)
		}
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), `Register("k").`+tc.field) {
					t.Errorf("Register(%+v): got panic %v, want one naming %s", tc.o, r, tc.field)
				}
			}()
			hopper.RegisterRaw(hopper.NewWorkers(), "k", nil, &tc.o)
		}()
	}
	if n, err := c.Count(ctx, hopper.ListOptions{}); err != nil || n != 0 {
		t.Errorf("after refused enqueues: %d jobs, %v; want none", n, err)
	}
	id := enqueue(t, c, "k", nil, &hopper.EnqueueOptions{MaxAttempts: hopper.MaxAttemptsLimit, Priority: hopper.MaxPriority, Delay: time.Hour})
	for _, p := range []int{hopper.MaxPriority + 1, hopper.MinPriority - 1} {
		var fe *hopper.FieldError
		if _, err := c.Reschedule(ctx, id, time.Time{}, &p); !errors.As(err, &fe) || fe.Field != "priority" {
			t.Errorf("Reschedule to priority %d: got %v, want a FieldError on priority", p, err)
		}
	}
	low := hopper.MinPriority
	j, err := c.Reschedule(ctx, id, time.Time{}, &low)
	if err != nil || j.Priority != hopper.MinPriority || j.MaxAttempts != hopper.MaxAttemptsLimit {
		t.Errorf("Reschedule to priority %d: got %+v, %v", low, j, err)
	}
}

// TestClosedIsOneError: after Stop, reads of an owned store and writes
// through the client fail with ErrClosed.
func TestClosedIsOneError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := hopper.NewClient(hopper.Config{Logger: quiet})
	id := enqueue(t, c, "k", nil, nil)
	c.StopNow()
	if _, err := c.Get(ctx, id); !errors.Is(err, hopper.ErrClosed) {
		t.Errorf("Get after Stop: %v, want ErrClosed", err)
	}
	if _, err := c.Enqueue(ctx, "k", nil, nil); !errors.Is(err, hopper.ErrClosed) {
		t.Errorf("Enqueue after Stop: %v, want ErrClosed", err)
	}
	if _, err := c.Cancel(ctx, id); !errors.Is(err, hopper.ErrClosed) {
		t.Errorf("Cancel after Stop: %v, want ErrClosed", err)
	}
	if err := c.Start(); !errors.Is(err, hopper.ErrClosed) {
		t.Errorf("Start after Stop: %v, want ErrClosed", err)
	}
	// The client's own refusal says what happened (it said "closed").
	if _, err := c.Enqueue(ctx, "k", nil, nil); !errors.Is(err, hopper.ErrClientStopped) || err.Error() != "hopper: client stopped" {
		t.Errorf("Enqueue after Stop: %q, want ErrClientStopped, \"hopper: client stopped\"", err)
	}
}

// TestHooksSeeEveryTransition: OnEvent gets every transition, none dropped,
// synchronously; OnStoreCall times each store operation; Pool counts the
// busy workers.
func TestHooksSeeEveryTransition(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var events []hopper.EventType
		calls := map[string]int{}
		ws := hopper.NewWorkers()
		release := make(chan struct{})
		hopper.RegisterRaw(ws, "k", func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-release
			return nil, errors.New("once")
		}, &hopper.EnqueueOptions{MaxAttempts: 2, Retry: &backoff.Policy{Strategy: backoff.StrategyFixed, Base: time.Second}})
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 3,
			OnEvent: func(ev hopper.Event) {
				mu.Lock()
				events = append(events, ev.Type)
				mu.Unlock()
			},
			OnStoreCall: func(op string, took time.Duration, err error) {
				mu.Lock()
				calls[op]++
				mu.Unlock()
			},
		})
		id := enqueue(t, c, "k", nil, nil)
		synctest.Wait()
		if p := c.Pool(); p.Workers != 3 || p.Busy != 1 {
			t.Errorf("Pool while the job runs: %+v, want 3 workers, 1 busy", p)
		}
		close(release)
		wait(t, c, id)
		mu.Lock()
		defer mu.Unlock()
		want := []hopper.EventType{"enqueued", "started", "retrying", "started", "dead"}
		if fmt.Sprint(events) != fmt.Sprint(want) {
			t.Errorf("events %v, want %v", events, want)
		}
		for _, op := range []string{"enqueue", "claim", "finish"} {
			if calls[op] == 0 {
				t.Errorf("no %s call reported: %v", op, calls)
			}
		}
	})
}

// TestNoTimeoutOverTheKinds: a job's NoTimeout runs it without the kind's
// timeout (a plain 0 inherits it).
func TestNoTimeoutOverTheKinds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
			select {
			case <-time.After(time.Minute):
				return "done", nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}, &hopper.EnqueueOptions{Timeout: time.Second, MaxAttempts: 1})
		c := silentClient(t, hopper.Config{Workers: ws})
		startClient(t, c)
		inherit := enqueue(t, c, "slow", nil, nil)
		none := enqueue(t, c, "slow", nil, &hopper.EnqueueOptions{Timeout: hopper.NoTimeout})
		if j := waitDone(t, c, inherit); j.State != hopper.StateDead {
			t.Errorf("plain 0: %s, want dead after the kind's 1s timeout", j.State)
		}
		if j := waitDone(t, c, none); j.State != hopper.StateCompleted || j.Timeout != hopper.NoTimeout {
			t.Errorf("NoTimeout: %s (timeout %s), want completed after a minute", j.State, j.Timeout)
		}
		stopGracefully(t, c)
	})
}
