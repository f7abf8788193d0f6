package hopper_test

// Tests of the step API with retries: Client.ProcessNext(ctx, now) runs the
// next due job, retries it after its backoff or dead-letters it. No test
// here starts a client or reads the clock; time is whatever now the test
// passes. They replay the design document "Build a Background Job Processor
// with Retries" (seed 001 of docs/architecture.md), whose process_next(now)
// is ProcessNext and whose states map as succeeded → completed,
// dead_letter → dead, pending → scheduled/available/retrying; its
// max_retries N is MaxAttempts N+1.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
)

// stepClient returns a client whose kind "job" runs fn and counts calls.
func stepClient(t *testing.T, opts *hopper.EnqueueOptions, fn func(call int) error) (*hopper.Client, *int) {
	t.Helper()
	calls := new(int) // ProcessNext runs handlers on the test goroutine
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "job", func(ctx context.Context, _ json.RawMessage) (any, error) {
		*calls++
		return nil, fn(*calls)
	}, opts)
	return silentClient(t, hopper.Config{Workers: ws}), calls
}

func stepEnqueue(t *testing.T, c *hopper.Client) hopper.ID {
	t.Helper()
	res, err := c.Enqueue(context.Background(), "job", map[string]string{"to": "a@x.com"}, nil)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return res.ID
}

// stepAt calls ProcessNext at now and checks whether a job was due.
func stepAt(t *testing.T, c *hopper.Client, now time.Time, wantRan bool) *hopper.Job {
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

// TestStepSuccessRunsOnce: a handler that returns normally leaves the job
// succeeded (completed) with attempts == 1, and it is never invoked again.
func TestStepSuccessRunsOnce(t *testing.T) {
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
	c := silentClient(t, hopper.Config{Workers: ws})
	defer stopGracefully(t, c)
	res, err := c.Enqueue(context.Background(), "send_email", email{To: "a@x.com"}, nil)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	j := stepAt(t, c, farFuture, true)
	if j.ID != res.ID || j.State != hopper.StateCompleted || j.Attempt != 1 {
		t.Errorf("got job %d state %s attempt %d, want job %d completed, attempt 1", j.ID, j.State, j.Attempt, res.ID)
	}
	stepAt(t, c, farFuture.Add(time.Hour), false)
	if len(got) != 1 || got[0] != "a@x.com" {
		t.Errorf("handler calls: got %v, want [a@x.com]", got)
	}
}

// TestStepTransientFailureRetriedAtDelay: a transient failure with
// max_retries=3 and retry_delay_seconds=5 is retried at t0+5s (not at t0+4s)
// and then succeeds: attempts == 2.
func TestStepTransientFailureRetriedAtDelay(t *testing.T) {
	t.Parallel()
	fixed := backoff.Fixed(5 * time.Second)
	c, calls := stepClient(t, &hopper.EnqueueOptions{MaxAttempts: 1 + 3, Retry: &fixed}, func(call int) error {
		if call == 1 {
			return errors.New("TransientError: upstream timeout")
		}
		return nil
	})
	defer stopGracefully(t, c)
	id := stepEnqueue(t, c)
	t0 := farFuture
	j := stepAt(t, c, t0, true)
	if j.State != hopper.StateRetrying || !j.RunAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after the failure: got state %s run at %s, want retrying at t0+5s", j.State, j.RunAt)
	}
	stepAt(t, c, t0.Add(4*time.Second), false)
	j = stepAt(t, c, t0.Add(5*time.Second), true)
	if j.ID != id || j.State != hopper.StateCompleted || j.Attempt != 2 || *calls != 2 {
		t.Errorf("got state %s attempt %d calls %d, want completed, 2, 2", j.State, j.Attempt, *calls)
	}
}

// TestStepPermanentErrorDeadAtOnce: a PermanentError dead-letters the job at
// once, with attempts == 1 and the message in last_error.
func TestStepPermanentErrorDeadAtOnce(t *testing.T) {
	t.Parallel()
	c, _ := stepClient(t, &hopper.EnqueueOptions{MaxAttempts: 4}, func(int) error {
		return hopper.Permanent(errors.New("expired credential"))
	})
	defer stopGracefully(t, c)
	stepEnqueue(t, c)
	j := stepAt(t, c, farFuture, true)
	if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, "expired credential") {
		t.Errorf("got state %s attempt %d last error %q, want dead, 1, containing %q",
			j.State, j.Attempt, j.LastError, "expired credential")
	}
}

// TestStepFollowsNowNotClock: retries, backoffs and every recorded time
// follow the now values passed to ProcessNext, hours apart, not the clock.
func TestStepFollowsNowNotClock(t *testing.T) {
	t.Parallel()
	fixed := backoff.Fixed(time.Hour)
	c, calls := stepClient(t, &hopper.EnqueueOptions{MaxAttempts: 3, Retry: &fixed}, func(int) error {
		return errors.New("flaky API")
	})
	defer stopGracefully(t, c)
	id := stepEnqueue(t, c)
	t0 := farFuture
	nows := []time.Time{t0, t0.Add(time.Hour), t0.Add(2 * time.Hour)}
	stepAt(t, c, nows[0], true)
	for _, now := range nows[1:] {
		stepAt(t, c, now.Add(-time.Nanosecond), false) // backoff not over
		stepAt(t, c, now, true)
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

// TestStepPermanentIgnoresAttemptsLeft: a permanent failure is a
// separate control path: with 99 attempts left the job still dies at once.
func TestStepPermanentIgnoresAttemptsLeft(t *testing.T) {
	t.Parallel()
	fixed := backoff.Fixed(time.Second)
	c, calls := stepClient(t, &hopper.EnqueueOptions{MaxAttempts: 100, Retry: &fixed}, func(call int) error {
		if call == 1 {
			return errors.New("transient")
		}
		return hopper.Permanent(errors.New("bad payload"))
	})
	defer stopGracefully(t, c)
	stepEnqueue(t, c)
	if j := stepAt(t, c, farFuture, true); j.State != hopper.StateRetrying {
		t.Fatalf("after a transient failure: got %s, want retrying", j.State)
	}
	j := stepAt(t, c, farFuture.Add(time.Second), true)
	if j.State != hopper.StateDead || j.Attempt != 2 || !strings.Contains(j.LastError, "bad payload") {
		t.Errorf("after a permanent failure: got state %s attempt %d error %q, want dead, 2, bad payload",
			j.State, j.Attempt, j.LastError)
	}
	stepAt(t, c, farFuture.Add(24*time.Hour), false)
	if *calls != 2 {
		t.Errorf("calls: got %d, want 2", *calls)
	}
}

// TestStepFinishedNeverRerun: completed and dead jobs are never
// run again, however far now advances.
func TestStepFinishedNeverRerun(t *testing.T) {
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
	c := silentClient(t, hopper.Config{Workers: ws})
	defer stopGracefully(t, c)
	modes := []string{"ok", "permanent", "exhausted"}
	for _, m := range modes {
		if _, err := c.Enqueue(ctx, "job", m, &hopper.EnqueueOptions{MaxAttempts: 1}); err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
	}
	ran, err := c.RunReady(ctx, farFuture)
	if err != nil || len(ran) != 3 {
		t.Fatalf("RunReady: got %d jobs (err %v), want 3", len(ran), err)
	}
	for i, want := range []hopper.State{hopper.StateCompleted, hopper.StateDead, hopper.StateDead} {
		if ran[i].State != want {
			t.Errorf("job %s: got %s, want %s", modes[i], ran[i].State, want)
		}
	}
	for _, later := range []time.Duration{time.Second, time.Hour, 24 * time.Hour, 365 * 24 * time.Hour} {
		stepAt(t, c, farFuture.Add(later), false)
	}
	for _, m := range modes {
		if calls[m] != 1 {
			t.Errorf("job %s ran %d times, want 1", m, calls[m])
		}
	}
}

// TestStepExponentialBackoffGrows answers the follow-up: with
// exponential backoff (no jitter) retry #2 waits longer than retry #1. The
// formula lives in package backoff; here it is observed through the run-at
// that each failed ProcessNext sets.
func TestStepExponentialBackoffGrows(t *testing.T) {
	t.Parallel()
	p := backoff.Exponential(time.Second, time.Hour)
	p.Jitter = backoff.JitterNone
	c, _ := stepClient(t, &hopper.EnqueueOptions{MaxAttempts: 4, Retry: &p}, func(int) error {
		return errors.New("flaky")
	})
	defer stopGracefully(t, c)
	stepEnqueue(t, c)
	now := farFuture
	var delays []time.Duration
	for range 3 {
		j := stepAt(t, c, now, true)
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
	if j := stepAt(t, c, now, true); j.State != hopper.StateDead {
		t.Errorf("after 4 attempts: got %s, want dead", j.State)
	}
}
