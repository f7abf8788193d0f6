package hopper_test

// Seed 001: "Build a Background Job Processor with Retries". The seed's
// process_next(now) is Client.ProcessNext(ctx, now): no seed 001 test starts a
// client or reads the clock; time is whatever now the test passes. The
// seed's states map as succeeded → completed, dead_letter → dead, pending →
// scheduled/available/retrying; max_retries N is MaxAttempts N+1.
//
// This file also holds the small helpers (prefixed "seed") that all the
// seed*_test.go files share.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// seedBase is a fixed instant far in the future (a Monday, 00:00 UTC). A job
// enqueued without a run time is due at the wall clock's now and so is due at
// seedBase too; jobs given run times around seedBase never depend on the real
// clock. The step API (ProcessNext, RunReady, FireSchedules) takes it as now.
var seedBase = time.Date(2100, time.January, 4, 0, 0, 0, 0, time.UTC)

// seedClient returns a client for cfg with a silent logger, stopped (at the
// latest) when the test ends.
func seedClient(t *testing.T, cfg hopper.Config) *hopper.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := hopper.NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	// A safety net for tests that fail before their own Stop: in a synctest
	// bubble, cleanups run inside the bubble, so no goroutine is left.
	// Stopping twice is allowed.
	t.Cleanup(func() { _ = c.StopNow() })
	return c
}

// seedStop stops c gracefully and reports an error.
func seedStop(t *testing.T, c *hopper.Client) {
	t.Helper()
	if err := c.Stop(context.Background()); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// seedWait waits for job id to finish.
func seedWait(t *testing.T, c *hopper.Client, id hopper.ID) *hopper.Job {
	t.Helper()
	j, err := c.Wait(context.Background(), id)
	if err != nil {
		t.Fatalf("Wait(%d): %v", id, err)
	}
	return j
}

// seedFunc enqueues a closure.
func seedFunc(t *testing.T, c *hopper.Client, fn hopper.Func, opts *hopper.EnqueueOptions) hopper.ID {
	t.Helper()
	res, err := c.EnqueueFunc(context.Background(), fn, opts)
	if err != nil {
		t.Fatalf("EnqueueFunc: %v", err)
	}
	return res.ID
}

// seedRecorder records strings from concurrent handlers.
type seedRecorder struct {
	mu    sync.Mutex
	items []string
}

func (r *seedRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, s)
}

func (r *seedRecorder) get() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

// seedRecord returns a closure that records name and succeeds.
func seedRecord(r *seedRecorder, name string) hopper.Func {
	return func(context.Context) (any, error) {
		r.add(name)
		return name, nil
	}
}

// seedStart starts c.
func seedStart(t *testing.T, c *hopper.Client) {
	t.Helper()
	if err := c.Start(); err != nil {
		t.Fatalf("Start: %v", err)
	}
}

// seedDeadIDs lists the IDs in the dead-letter queue.
func seedDeadIDs(t *testing.T, c *hopper.Client) []hopper.ID {
	t.Helper()
	dead, err := c.DeadJobs(context.Background(), 0, 0)
	if err != nil {
		t.Fatalf("DeadJobs: %v", err)
	}
	var ids []hopper.ID
	for _, j := range dead {
		ids = append(ids, j.ID)
	}
	return ids
}

// seedCrash claims the waiting job through the store as a worker that
// then dies, holding a lease of d: it simulates a crash mid-task.
func seedCrash(t *testing.T, st *memstore.Store, d time.Duration) {
	t.Helper()
	now := time.Now()
	res, err := st.Claim(context.Background(), store.ClaimParams{Now: now, Limit: 1, Worker: "crashed", LeaseUntil: now.Add(d)})
	if err != nil || len(res.Jobs) != 1 {
		t.Fatalf("Claim: got %d jobs, %v; want 1", len(res.Jobs), err)
	}
}

// seed001Client returns a client whose kind "job" runs fn and counts calls.
func seed001Client(t *testing.T, opts *hopper.EnqueueOptions, fn func(call int) error) (*hopper.Client, *int) {
	t.Helper()
	calls := new(int) // ProcessNext runs handlers on the test goroutine
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "job", func(ctx context.Context, _ json.RawMessage) (any, error) {
		*calls++
		return nil, fn(*calls)
	}, opts)
	return seedClient(t, hopper.Config{Workers: ws}), calls
}

func seed001Enqueue(t *testing.T, c *hopper.Client) hopper.ID {
	t.Helper()
	res, err := c.Enqueue(context.Background(), "job", map[string]string{"to": "a@x.com"}, nil)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return res.ID
}

// seed001Step calls ProcessNext at now and checks whether a job was due.
func seed001Step(t *testing.T, c *hopper.Client, now time.Time, wantRan bool) *hopper.Job {
	t.Helper()
	j, ok, err := c.ProcessNext(context.Background(), now)
	if err != nil {
		t.Fatalf("ProcessNext(%s): %v", now, err)
	}
	if ok != wantRan {
		t.Fatalf("ProcessNext(%s): got %v, want %v", now, ok, wantRan)
	}
	return j
}

// TestSeed001Example1Success: a handler that returns normally leaves the job
// succeeded (completed) with attempts == 1, and it is never invoked again.
func TestSeed001Example1Success(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	var got []string
	type email struct {
		To string `json:"to"`
	}
	hopper.Register(ws, "send_email", func(ctx context.Context, e email) (any, error) {
		got = append(got, e.To)
		return nil, nil
	}, nil)
	c := seedClient(t, hopper.Config{Workers: ws})
	defer seedStop(t, c)
	res, err := c.Enqueue(context.Background(), "send_email", email{To: "a@x.com"}, nil)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	j := seed001Step(t, c, seedBase, true)
	if j.ID != res.ID || j.State != hopper.StateCompleted || j.Attempt != 1 {
		t.Errorf("got job %d state %s attempt %d, want job %d completed, attempt 1", j.ID, j.State, j.Attempt, res.ID)
	}
	seed001Step(t, c, seedBase.Add(time.Hour), false)
	if len(got) != 1 || got[0] != "a@x.com" {
		t.Errorf("handler calls: got %v, want [a@x.com]", got)
	}
}

// TestSeed001Example2TransientThenSuccess: a transient failure with
// max_retries=3 and retry_delay_seconds=5 is retried at t0+5s (not at t0+4s)
// and then succeeds: attempts == 2.
func TestSeed001Example2TransientThenSuccess(t *testing.T) {
	t.Parallel()
	fixed := backoff.Fixed(5 * time.Second)
	c, calls := seed001Client(t, &hopper.EnqueueOptions{MaxAttempts: 1 + 3, Retry: &fixed}, func(call int) error {
		if call == 1 {
			return errors.New("TransientError: upstream timeout")
		}
		return nil
	})
	defer seedStop(t, c)
	id := seed001Enqueue(t, c)
	t0 := seedBase
	j := seed001Step(t, c, t0, true)
	if j.State != hopper.StateRetrying || !j.RunAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after the failure: got state %s run at %s, want retrying at t0+5s", j.State, j.RunAt)
	}
	seed001Step(t, c, t0.Add(4*time.Second), false)
	j = seed001Step(t, c, t0.Add(5*time.Second), true)
	if j.ID != id || j.State != hopper.StateCompleted || j.Attempt != 2 || *calls != 2 {
		t.Errorf("got state %s attempt %d calls %d, want completed, 2, 2", j.State, j.Attempt, *calls)
	}
}

// TestSeed001Example3Permanent: a PermanentError dead-letters the job at
// once, with attempts == 1 and the message in last_error.
func TestSeed001Example3Permanent(t *testing.T) {
	t.Parallel()
	c, _ := seed001Client(t, &hopper.EnqueueOptions{MaxAttempts: 4}, func(int) error {
		return hopper.Permanent(errors.New("expired credential"))
	})
	defer seedStop(t, c)
	seed001Enqueue(t, c)
	j := seed001Step(t, c, seedBase, true)
	if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, "expired credential") {
		t.Errorf("got state %s attempt %d last error %q, want dead, 1, containing %q",
			j.State, j.Attempt, j.LastError, "expired credential")
	}
}

// TestSeed001ConstraintNoWallClock: retries, backoffs and every recorded time
// follow the now values passed to ProcessNext, hours apart, not the clock.
func TestSeed001ConstraintNoWallClock(t *testing.T) {
	t.Parallel()
	fixed := backoff.Fixed(time.Hour)
	c, calls := seed001Client(t, &hopper.EnqueueOptions{MaxAttempts: 3, Retry: &fixed}, func(int) error {
		return errors.New("flaky API")
	})
	defer seedStop(t, c)
	id := seed001Enqueue(t, c)
	t0 := seedBase
	nows := []time.Time{t0, t0.Add(time.Hour), t0.Add(2 * time.Hour)}
	seed001Step(t, c, nows[0], true)
	for _, now := range nows[1:] {
		seed001Step(t, c, now.Add(-time.Nanosecond), false) // backoff not over
		seed001Step(t, c, now, true)
	}
	j, err := c.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if j.State != hopper.StateDead || *calls != 3 || len(j.Attempts) != 3 {
		t.Fatalf("got state %s, %d calls, %d attempts, want dead, 3, 3", j.State, *calls, len(j.Attempts))
	}
	for i, a := range j.Attempts {
		if !a.StartedAt.Equal(nows[i]) {
			t.Errorf("attempt %d started at %s, want %s", i+1, a.StartedAt, nows[i])
		}
	}
	if !j.FinishedAt.Equal(nows[2]) {
		t.Errorf("finished at %s, want %s", j.FinishedAt, nows[2])
	}
}

// TestSeed001ConstraintPermanentSkipsRetryCap: a permanent failure is a
// separate control path: with 99 attempts left the job still dies at once.
func TestSeed001ConstraintPermanentSkipsRetryCap(t *testing.T) {
	t.Parallel()
	fixed := backoff.Fixed(time.Second)
	c, calls := seed001Client(t, &hopper.EnqueueOptions{MaxAttempts: 100, Retry: &fixed}, func(call int) error {
		if call == 1 {
			return errors.New("transient")
		}
		return hopper.Permanent(errors.New("bad payload"))
	})
	defer seedStop(t, c)
	seed001Enqueue(t, c)
	if j := seed001Step(t, c, seedBase, true); j.State != hopper.StateRetrying {
		t.Fatalf("after a transient failure: got %s, want retrying", j.State)
	}
	j := seed001Step(t, c, seedBase.Add(time.Second), true)
	if j.State != hopper.StateDead || j.Attempt != 2 || !strings.Contains(j.LastError, "bad payload") {
		t.Errorf("after a permanent failure: got state %s attempt %d error %q, want dead, 2, bad payload",
			j.State, j.Attempt, j.LastError)
	}
	seed001Step(t, c, seedBase.Add(24*time.Hour), false)
	if *calls != 2 {
		t.Errorf("calls: got %d, want 2", *calls)
	}
}

// TestSeed001ConstraintFinishedNeverRerun: completed and dead jobs are never
// run again, however far now advances.
func TestSeed001ConstraintFinishedNeverRerun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	calls := map[string]int{}
	hopper.Register(ws, "job", func(ctx context.Context, mode string) (any, error) {
		calls[mode]++
		switch mode {
		case "permanent":
			return nil, hopper.Permanent(errors.New("no"))
		case "exhausted":
			return nil, errors.New("no")
		}
		return "ok", nil
	}, nil)
	c := seedClient(t, hopper.Config{Workers: ws})
	defer seedStop(t, c)
	modes := []string{"ok", "permanent", "exhausted"}
	for _, m := range modes {
		if _, err := c.Enqueue(ctx, "job", m, &hopper.EnqueueOptions{MaxAttempts: 1}); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	ran, err := c.RunReady(ctx, seedBase)
	if err != nil || len(ran) != 3 {
		t.Fatalf("RunReady: got %d jobs (err %v), want 3", len(ran), err)
	}
	for i, want := range []hopper.State{hopper.StateCompleted, hopper.StateDead, hopper.StateDead} {
		if ran[i].State != want {
			t.Errorf("job %s: got %s, want %s", modes[i], ran[i].State, want)
		}
	}
	for _, later := range []time.Duration{time.Second, time.Hour, 24 * time.Hour, 365 * 24 * time.Hour} {
		seed001Step(t, c, seedBase.Add(later), false)
	}
	for _, m := range modes {
		if calls[m] != 1 {
			t.Errorf("job %s ran %d times, want 1", m, calls[m])
		}
	}
}

// TestSeed001FollowUpExponentialBackoff answers the follow-up: with
// exponential backoff (no jitter) retry #2 waits longer than retry #1. The
// formula lives in package backoff; here it is observed through the run-at
// that each failed ProcessNext sets.
func TestSeed001FollowUpExponentialBackoff(t *testing.T) {
	t.Parallel()
	p := backoff.Exponential(time.Second, time.Hour)
	p.Jitter = backoff.JitterNone
	c, _ := seed001Client(t, &hopper.EnqueueOptions{MaxAttempts: 4, Retry: &p}, func(int) error {
		return errors.New("flaky")
	})
	defer seedStop(t, c)
	seed001Enqueue(t, c)
	now := seedBase
	var delays []time.Duration
	for range 3 {
		j := seed001Step(t, c, now, true)
		if j.State != hopper.StateRetrying {
			t.Fatalf("got %s, want retrying", j.State)
		}
		delays = append(delays, j.RunAt.Sub(now))
		now = j.RunAt
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Errorf("retry #%d waits %s, want %s", i+1, delays[i], want[i])
		}
	}
	if !(delays[1] > delays[0]) {
		t.Errorf("retry #2 (%s) does not wait longer than retry #1 (%s)", delays[1], delays[0])
	}
	if j := seed001Step(t, c, now, true); j.State != hopper.StateDead {
		t.Errorf("after 4 attempts: got %s, want dead", j.State)
	}
}
