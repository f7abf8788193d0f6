package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

var quiet = slog.New(slog.DiscardHandler)

// newClient returns a started client on a fresh memstore, stopped at the end
// of the test (which must run inside a synctest bubble).
func newClient(t *testing.T, cfg hopper.Config) *hopper.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	c, err := hopper.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.StopNow() })
	return c
}

func wait(t *testing.T, c *hopper.Client, id hopper.ID) *hopper.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	j, err := c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%d): %v", id, err)
	}
	return j
}

func enqueue(t *testing.T, c *hopper.Client, kind string, args any, o *hopper.EnqueueOptions) hopper.ID {
	t.Helper()
	r, err := c.Enqueue(context.Background(), kind, args, o)
	if err != nil {
		t.Fatalf("Enqueue(%s): %v", kind, err)
	}
	return r.ID
}

func TestTimeoutFailsAttemptAndRetries(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, &hopper.EnqueueOptions{Timeout: 5 * time.Second})
		p := backoff.Fixed(time.Second)
		c := newClient(t, hopper.Config{Workers: ws, Defaults: hopper.EnqueueOptions{Retry: &p, MaxAttempts: 2}})
		start := time.Now()
		j := wait(t, c, enqueue(t, c, "slow", nil, nil))
		if j.State != hopper.StateDead || len(j.Attempts) != 2 {
			t.Fatalf("got state %s with %d attempts, want dead after 2", j.State, len(j.Attempts))
		}
		if !strings.Contains(j.LastError, "timed out after 5s") {
			t.Errorf("LastError = %q, want a timeout", j.LastError)
		}
		if got := time.Since(start); got != 11*time.Second {
			t.Errorf("took %s, want 11s (5s + 1s backoff + 5s)", got)
		}
	})
}

func TestPerJobTimeoutOverridesKind(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "slow", func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, &hopper.EnqueueOptions{Timeout: time.Hour})
		c := newClient(t, hopper.Config{Workers: ws, Defaults: hopper.EnqueueOptions{MaxAttempts: 1}})
		start := time.Now()
		wait(t, c, enqueue(t, c, "slow", nil, &hopper.EnqueueOptions{Timeout: 2 * time.Second}))
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("took %s, want the job's own 2s timeout", got)
		}
	})
}

func TestPanicFailsAttemptAndWorkerSurvives(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "panic", func(ctx context.Context, _ json.RawMessage) (any, error) {
			panic("kaboom")
		}, nil)
		hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) { return "fine", nil }, nil)
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 1, Defaults: hopper.EnqueueOptions{MaxAttempts: 1}})
		j := wait(t, c, enqueue(t, c, "panic", nil, nil))
		if j.State != hopper.StateDead || !strings.Contains(j.LastError, "panic: kaboom") || !strings.Contains(j.LastError, "goroutine") {
			t.Fatalf("got %s %q, want dead with the panic and its stack", j.State, j.LastError)
		}
		j = wait(t, c, enqueue(t, c, "ok", nil, nil))
		if j.State != hopper.StateCompleted || string(j.Result) != `"fine"` {
			t.Fatalf("next job: got %s %s", j.State, j.Result)
		}
	})
}

func TestCancelRunningJobEndsCancelledNotRetried(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		started := make(chan struct{})
		hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws})
		id := enqueue(t, c, "block", nil, nil)
		<-started
		ok, err := c.Cancel(context.Background(), id)
		if !ok || err != nil {
			t.Fatalf("Cancel(running) = %v, %v; want true", ok, err)
		}
		j := wait(t, c, id)
		if j.State != hopper.StateCancelled || j.Attempt != 1 {
			t.Fatalf("got %s after %d attempts, want cancelled after 1", j.State, j.Attempt)
		}
		if ok, _ := c.Cancel(context.Background(), id); ok {
			t.Error("Cancel(cancelled) = true, want false")
		}
	})
}

func TestGracefulStopReleasesInterruptedJobWithoutLosingAnAttempt(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		started := make(chan struct{}, 2)
		hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}, nil)
		hopper.RegisterRaw(ws, "short", func(ctx context.Context, _ json.RawMessage) (any, error) {
			started <- struct{}{}
			time.Sleep(time.Second)
			return nil, nil
		}, nil)
		st := memstore.New()
		c, _ := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Concurrency: 2, Logger: quiet})
		c.Start()
		ctx := context.Background()
		blocked := enqueue(t, c, "block", nil, nil)
		short := enqueue(t, c, "short", nil, nil)
		<-started
		<-started
		waiting := enqueue(t, c, "short", nil, &hopper.EnqueueOptions{Delay: time.Minute})
		stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		before := time.Now()
		if err := c.Stop(stopCtx); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(before); got != 5*time.Second {
			t.Errorf("Stop took %s, want the 5s grace period", got)
		}
		if _, err := c.Enqueue(ctx, "short", nil, nil); !errors.Is(err, hopper.ErrClosed) {
			t.Errorf("Enqueue after Stop: got %v, want ErrClosed", err)
		}
		for id, want := range map[hopper.ID]hopper.State{blocked: hopper.StateAvailable, short: hopper.StateCompleted, waiting: hopper.StateScheduled} {
			j, _ := st.Get(ctx, id)
			if j.State != want {
				t.Errorf("job %d: got %s, want %s", id, j.State, want)
			}
			if id == blocked && (j.Attempt != 0 || j.Attempts[0].Outcome != job.OutcomeReleased) {
				t.Errorf("released job: attempt %d history %+v, want attempt 0 and a released record", j.Attempt, j.Attempts)
			}
		}
	})
}

func TestStartStopIdempotent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, _ := hopper.NewClient(hopper.Config{Logger: quiet})
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatalf("second Start: %v", err)
		}
		c.StopNow()
		if err := c.Stop(context.Background()); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if err := c.Start(); !errors.Is(err, hopper.ErrClosed) {
			t.Fatalf("Start after Stop: got %v, want ErrClosed", err)
		}
	})
}

func TestQueueConcurrencyLimits(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		var cur, peak [2]atomic.Int64
		hopper.Register(ws, "work", func(ctx context.Context, q int) (any, error) {
			n := cur[q].Add(1)
			for {
				p := peak[q].Load()
				if n <= p || peak[q].CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Second)
			cur[q].Add(-1)
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 4,
			Queues: map[string]hopper.QueueConfig{"limited": {MaxWorkers: 1}, "open": {}, "ignored-not": {}}})
		var ids []hopper.ID
		for i := range 6 {
			ids = append(ids, enqueue(t, c, "work", 0, &hopper.EnqueueOptions{Queue: "limited", Priority: -i}))
			ids = append(ids, enqueue(t, c, "work", 1, &hopper.EnqueueOptions{Queue: "open"}))
		}
		other := enqueue(t, c, "work", 1, &hopper.EnqueueOptions{Queue: "elsewhere"})
		for _, id := range ids {
			wait(t, c, id)
		}
		if p := peak[0].Load(); p != 1 {
			t.Errorf("limited queue ran %d at once, want 1", p)
		}
		if p := peak[1].Load(); p != 3 {
			t.Errorf("open queue ran %d at once, want 3 (4 workers, 1 held by the limited queue)", p)
		}
		if j, _ := c.Get(context.Background(), other); j.State != hopper.StateAvailable {
			t.Errorf("job in an unworked queue: got %s, want available", j.State)
		}
	})
}

func TestUniqueKey(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		c, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet})
		a, _ := c.Enqueue(ctx, "k", nil, &hopper.EnqueueOptions{UniqueKey: "u"})
		b, err := c.Enqueue(ctx, "k", nil, &hopper.EnqueueOptions{UniqueKey: "u"})
		if err != nil || !b.Duplicate || b.ID != a.ID {
			t.Fatalf("second enqueue: %+v, %v; want duplicate of %d", b, err, a.ID)
		}
		strict, _ := hopper.NewClient(hopper.Config{Store: st, UniqueConflict: hopper.UniqueError, Logger: quiet})
		if _, err := strict.Enqueue(ctx, "k", nil, &hopper.EnqueueOptions{UniqueKey: "u"}); !errors.Is(err, hopper.ErrDuplicate) {
			t.Fatalf("UniqueError: got %v, want ErrDuplicate", err)
		}
		c.Cancel(ctx, a.ID)
		d, _ := c.Enqueue(ctx, "k", nil, &hopper.EnqueueOptions{UniqueKey: "u"})
		if d.Duplicate || d.ID == a.ID {
			t.Fatalf("after the holder finished: %+v, want a new job", d)
		}
	})
}

func TestEnqueueRejectsBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, _ := hopper.NewClient(hopper.Config{Logger: quiet})
	for _, tc := range []struct {
		kind  string
		args  any
		o     *hopper.EnqueueOptions
		field string
	}{
		{"", nil, nil, "kind"},
		{"k", json.RawMessage("{"), nil, "args"},
		{"k", make(chan int), nil, "args"},
		{"k", nil, &hopper.EnqueueOptions{Delay: -time.Second}, "delay"},
		{"k", nil, &hopper.EnqueueOptions{Delay: time.Second, RunAt: time.Now()}, "delay"},
		{"k", nil, &hopper.EnqueueOptions{MaxAttempts: -2}, "max_attempts"},
		{"k", nil, &hopper.EnqueueOptions{Timeout: -time.Second}, "timeout"}, // -1ns is NoTimeout
		{"k", nil, &hopper.EnqueueOptions{Retry: &backoff.Policy{Strategy: "linear"}}, "retry.strategy"},
		{"k", nil, &hopper.EnqueueOptions{Retry: &backoff.Policy{Base: time.Hour, Max: time.Second}}, "retry.base"},
	} {
		_, err := c.Enqueue(ctx, tc.kind, tc.args, tc.o)
		var fe *hopper.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Enqueue(%q, %v, %+v): got %v, want a FieldError on %s", tc.kind, tc.args, tc.o, err, tc.field)
		}
	}
	if _, err := c.EnqueueFunc(ctx, nil, nil); err == nil {
		t.Error("EnqueueFunc(nil): want an error")
	}
	_, err := c.EnqueueMany(ctx, []hopper.EnqueueRequest{{Kind: "ok"}, {Kind: ""}})
	var fe *hopper.FieldError
	if !errors.As(err, &fe) || fe.Field != "kind" || !fe.InBatch || fe.Index != 1 || err.Error() != "[1].kind: "+fe.Reason {
		t.Errorf("EnqueueMany with a bad second job: got %#v, want FieldError on kind of item 1", err)
	}
	if jobs, _ := c.List(ctx, hopper.ListOptions{}); len(jobs) != 0 {
		t.Errorf("bad input stored %d jobs, want none", len(jobs))
	}
	if _, err := hopper.NewClient(hopper.Config{Concurrency: -1}); !errors.As(err, &fe) || fe.Field != "Config.Concurrency" {
		t.Errorf("NewClient(Concurrency -1): got %v", err)
	}
}

// TestArgsMustFitTheKind: a client refuses args that do not fit the
// kind's type and kinds it has no handler for; a job that slipped in through
// another client fails permanently without running the handler; a worker
// never claims a kind it cannot run.
func TestArgsMustFitTheKind(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws := hopper.NewWorkers()
		ran := 0
		hopper.Register(ws, "typed", func(ctx context.Context, a struct{ N int }) (any, error) { ran++; return a.N, nil }, nil)
		c := newClient(t, hopper.Config{Store: st, Workers: ws, ExternalKinds: []string{"theirs"}})
		var fe *hopper.FieldError
		for _, args := range []any{map[string]string{"N": "not a number"}, map[string]int{"N": 1, "M": 2}, []int{1}} {
			if _, err := c.Enqueue(ctx, "typed", args, nil); !errors.As(err, &fe) || fe.Field != "args" {
				t.Errorf("Enqueue(typed, %v): got %v, want a FieldError on args", args, err)
			}
		}
		_, err := c.Enqueue(ctx, "send_emial", nil, nil)
		if !errors.As(err, &fe) || fe.Field != "kind" || !errors.Is(err, hopper.ErrUnknownKind) || !strings.Contains(err.Error(), `"typed"`) {
			t.Errorf("Enqueue of an unregistered kind: got %v, want a FieldError on kind naming the registered kinds", err)
		}
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "send_emial"}); !errors.Is(err, hopper.ErrUnknownKind) {
			t.Errorf("AddSchedule of an unregistered kind: got %v", err)
		}
		theirs := enqueue(t, c, "theirs", nil, nil) // listed in ExternalKinds

		producer, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet}) // no workers: any kind
		bad, err := producer.Enqueue(ctx, "typed", map[string]string{"N": "x"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		j := wait(t, c, bad.ID)
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, "args do not fit") || ran != 0 {
			t.Fatalf("job with bad args: %s after %d attempts: %q (handler ran %d times)", j.State, j.Attempt, j.LastError, ran)
		}
		synctest.Wait()
		if j, _ := c.Get(ctx, theirs); j.State != hopper.StateAvailable || j.Attempt != 0 {
			t.Errorf("a kind this worker cannot run: %s after %d attempts, want available, never claimed", j.State, j.Attempt)
		}
	})
}

// positive is an args type that checks itself (Register calls Validate).
type positive struct{ N int }

func (p *positive) Validate() error {
	if p.N <= 0 {
		return fmt.Errorf("N must be positive, got %d", p.N)
	}
	return nil
}

// TestArgsValidate: Register calls the args type's Validate: Enqueue and
// AddSchedule refuse what it rejects (also no args at all, the zero value),
// storing nothing, and a rejected job that another client enqueued dies
// without running the handler.
func TestArgsValidate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws := hopper.NewWorkers()
		ran := 0
		hopper.Register(ws, "pos", func(ctx context.Context, a positive) (any, error) { ran++; return a.N, nil }, nil)
		c := newClient(t, hopper.Config{Store: st, Workers: ws})
		for _, args := range []any{positive{N: -1}, nil, json.RawMessage(`{"N":0}`)} {
			var fe *hopper.FieldError
			if _, err := c.Enqueue(ctx, "pos", args, nil); !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(err.Error(), "N must be positive") {
				t.Errorf("Enqueue(pos, %v): %v, want a FieldError on args from Validate", args, err)
			}
			if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: "pos", Args: args}); !errors.As(err, &fe) || fe.Field != "args" {
				t.Errorf("AddSchedule(pos, %v): %v, want a FieldError on args", args, err)
			}
		}
		if n, _ := c.Count(ctx, hopper.ListOptions{}); n != 0 {
			t.Fatalf("%d jobs stored after refused enqueues", n)
		}
		good := enqueue(t, c, "pos", positive{N: 3}, nil)
		producer, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet}) // no workers: any args
		bad, err := producer.Enqueue(ctx, "pos", positive{N: -2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if j := wait(t, c, good); j.State != hopper.StateCompleted || string(j.Result) != "3" {
			t.Errorf("valid args: %s, result %s", j.State, j.Result)
		}
		j := wait(t, c, bad.ID)
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, "N must be positive, got -2") || ran != 1 {
			t.Fatalf("job with args Validate rejects: %s after %d attempts: %q (handler ran %d times)", j.State, j.Attempt, j.LastError, ran)
		}
	})
}

// TestWorkersCheckArgs checks that CheckArgs gives a producer the answer
// Enqueue would: the FieldError of Register's decoding and Validate, any
// args for RegisterRaw, ErrUnknownKind for a kind not registered.
func TestWorkersCheckArgs(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.Register(ws, "pos", func(ctx context.Context, a positive) (any, error) { return nil, nil }, nil)
	hopper.RegisterRaw(ws, "raw", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	for _, tc := range []struct {
		kind, args string
		field      string // "" for no error
		reason     string
	}{
		{"pos", `{"N":2}`, "", ""},
		{"pos", `{"N":-1}`, "args", "N must be positive"},
		{"pos", `{"M":1}`, "args", `unknown field "M"`},
		{"pos", ``, "args", "N must be positive"},
		{"raw", `{"anything":[1]}`, "", ""},
		{"nope", `{}`, "kind", "no handler registered"},
	} {
		err := ws.CheckArgs(tc.kind, json.RawMessage(tc.args))
		var fe *hopper.FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("CheckArgs(%s, %s): %v, want nil", tc.kind, tc.args, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.reason)):
			t.Errorf("CheckArgs(%s, %s): %v, want a FieldError on %s saying %q", tc.kind, tc.args, err, tc.field, tc.reason)
		case tc.field == "kind" && !errors.Is(err, hopper.ErrUnknownKind):
			t.Errorf("CheckArgs(%s): %v, want ErrUnknownKind", tc.kind, err)
		}
	}
}

func TestEventsForEveryTransition(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		calls := 0
		hopper.RegisterRaw(ws, "flaky", func(ctx context.Context, _ json.RawMessage) (any, error) {
			calls++
			if calls == 1 {
				return nil, errors.New("first time fails")
			}
			return 42, nil
		}, nil)
		p := backoff.Fixed(time.Second)
		c := newClient(t, hopper.Config{Workers: ws, Defaults: hopper.EnqueueOptions{Retry: &p}})
		sub := c.Subscribe()
		id := enqueue(t, c, "flaky", nil, nil)
		wait(t, c, id)
		synctest.Wait()
		sub.Unsubscribe()
		var got []string
		for ev := range sub.C {
			got = append(got, string(ev.Type)+":"+ev.Job.State.String())
		}
		want := "enqueued:available started:running retrying:retrying started:running completed:completed"
		if strings.Join(got, " ") != want {
			t.Errorf("events: got %v, want %s", got, want)
		}
	})
}

// A worker that holds a job longer than its lease keeps it: heart-beats
// renew the lease and the rescuer never takes it away.
func TestLiveWorkerKeepsItsJobPastTheLease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		var runs atomic.Int64
		hopper.RegisterRaw(ws, "long", func(ctx context.Context, _ json.RawMessage) (any, error) {
			runs.Add(1)
			time.Sleep(time.Minute)
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws, LeaseDuration: 3 * time.Second, RescueInterval: time.Second})
		j := wait(t, c, enqueue(t, c, "long", nil, nil))
		if j.State != hopper.StateCompleted || runs.Load() != 1 || j.Attempt != 1 {
			t.Fatalf("got %s after %d runs (attempt %d), want completed once", j.State, runs.Load(), j.Attempt)
		}
	})
}

// A job whose worker vanished (its lease expired) is given back and run
// again; one whose workers keep dying is a poison pill and goes dead.
func TestRescueAndPoisonPill(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "k", func(ctx context.Context, _ json.RawMessage) (any, error) { return "ran", nil }, nil)
		// A "dead" process claimed both jobs and never came back.
		seed, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet})
		lost := enqueue(t, seed, "k", nil, nil)
		pill := enqueue(t, seed, "k", nil, nil)
		now := time.Now()
		st.Claim(ctx, store.ClaimParams{Now: now, Limit: 2, Worker: "dead", LeaseUntil: now.Add(time.Second)})
		// The pill has already killed two workers.
		for range 2 {
			time.Sleep(2 * time.Second)
			st.Rescue(ctx, store.RescueParams{Now: time.Now(), MaxCrashes: 3})
			now := time.Now()
			res, _ := st.Claim(ctx, store.ClaimParams{Now: now, Limit: 2, Worker: "dead", LeaseUntil: now.Add(time.Second)})
			for _, j := range res.Jobs {
				if j.ID == lost { // only the pill keeps crashing
					st.Finish(ctx, store.FinishParams{Now: now, Outcomes: []store.Outcome{{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: hopper.StateAvailable}}})
				}
			}
		}
		time.Sleep(2 * time.Second)
		c := newClient(t, hopper.Config{Store: st, Workers: ws, RescueInterval: time.Second, MaxCrashes: 3})
		if j := wait(t, c, lost); j.State != hopper.StateCompleted {
			t.Errorf("lost job: got %s, want completed after rescue", j.State)
		}
		j := wait(t, c, pill)
		if j.State != hopper.StateDead || !strings.Contains(j.LastError, "poison pill") || j.Crashes != 3 {
			t.Errorf("pill: got %s crashes %d %q, want dead as a poison pill after 3", j.State, j.Crashes, j.LastError)
		}
	})
}

func TestRetryAllDeadReportsEachJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "fail", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no"))
	}, nil)
	c, _ := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
	a := enqueue(t, c, "fail", nil, nil)
	b := enqueue(t, c, "fail", nil, nil)
	if jobs, _ := c.RunReady(ctx, time.Now()); len(jobs) != 2 {
		t.Fatalf("ran %d jobs, want 2", len(jobs))
	}
	sub := c.Subscribe(job.EventRetried)
	if n, err := c.RetryAllDead(ctx); n != 2 || err != nil {
		t.Fatalf("RetryAllDead() = %d, %v; want 2", n, err)
	}
	sub.Unsubscribe()
	var got []hopper.ID
	for ev := range sub.C {
		got = append(got, ev.Job.ID)
	}
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("retried events for %v, want [%d %d]", got, a, b)
	}
}

// Wait after Stop polls the store instead of spinning: another process may
// still finish the job.
func TestWaitAfterStopPolls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := memstore.New()
		c, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet})
		id := enqueue(t, c, "k", nil, nil)
		c.StopNow()
		done := make(chan *hopper.Job)
		go func() {
			j, _ := c.Wait(ctx, id)
			done <- j
		}()
		time.Sleep(time.Second) // fake: a spinning Wait would never let the bubble's clock move
		other, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet})
		other.Cancel(ctx, id)
		if j := <-done; j.State != hopper.StateCancelled {
			t.Fatalf("Wait returned %s, want cancelled", j.State)
		}
	})
}

// Client-side transitions get a structured log line too.
func TestClientTransitionsAreLogged(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, _ := hopper.NewClient(hopper.Config{Logger: log})
	ctx := context.Background()
	id := enqueue(t, c, "k", nil, &hopper.EnqueueOptions{Queue: "q", Delay: time.Hour})
	p := 3
	c.Reschedule(ctx, id, time.Time{}, &p)
	c.Cancel(ctx, id)
	for _, want := range []string{`msg="job enqueued" job=1 kind=k queue=q`, `msg="job rescheduled" job=1`, `msg="job cancelled" job=1`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
}

// A subscriber that does not read loses events beyond its buffer, counted,
// and never slows the client; PurgeDead, Count and Stats see the dead jobs.
func TestSlowSubscriberDropsAndDLQPurge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "fail", func(ctx context.Context, _ json.RawMessage) (any, error) {
			return nil, hopper.Permanent(errors.New("no"))
		}, nil)
		c, _ := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
		sub := c.Subscribe(job.EventEnqueued)
		n := hopper.SubscriptionBuffer + 10
		reqs := make([]hopper.EnqueueRequest, n)
		for i := range reqs {
			reqs[i] = hopper.EnqueueRequest{Kind: "fail"}
		}
		if _, err := c.EnqueueMany(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		if got := sub.Dropped(); got != 10 {
			t.Errorf("Dropped() = %d, want 10", got)
		}
		sub.Unsubscribe()
		if _, err := c.RunReady(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		if got, _ := c.Count(ctx, hopper.ListOptions{States: []hopper.State{hopper.StateDead}, Kind: "fail"}); got != n {
			t.Errorf("Count(dead) = %d, want %d", got, n)
		}
		if st, _ := c.Stats(ctx, time.Minute); st.Finished[hopper.StateDead] != n || st.Queues["default"][hopper.StateDead] != n {
			t.Errorf("Stats: finished %v by queue %v", st.Finished, st.Queues)
		}
		time.Sleep(2 * time.Hour) // fake
		if got, _ := c.PurgeDeadOlderThan(ctx, 3*time.Hour); got != 0 {
			t.Errorf("PurgeDead(older than 3h) removed %d, want 0", got)
		}
		if got, _ := c.PurgeDeadOlderThan(ctx, time.Hour); got != n {
			t.Errorf("PurgeDead(older than 1h) removed %d, want %d", got, n)
		}
	})
}

// TestWaitOnUnstartedClient pins what Wait's comment says: a client that
// was never started runs nothing, so Wait returns only when ctx is done —
// or when another client sharing the store runs the job.
func TestWaitOnUnstartedClient(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "ok", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
		st := memstore.New()
		idle, err := hopper.NewClient(hopper.Config{Workers: ws, Store: st, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { idle.StopNow() })
		id := enqueue(t, idle, "ok", nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		j, err := idle.Wait(ctx, id)
		if !errors.Is(err, context.DeadlineExceeded) || j == nil || j.State != hopper.StateAvailable {
			t.Fatalf("Wait on a client never started: %v, %v; want the job still available at the deadline", j, err)
		}
		newClient(t, hopper.Config{Workers: ws, Store: st}) // started: it runs the job
		if j := wait(t, idle, id); j.State != hopper.StateCompleted {
			t.Fatalf("Wait once another client runs the job: %s, want completed", j.State)
		}
	})
}
