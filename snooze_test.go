package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// TestSnoozeDoesNotBurnAnAttempt: a handler that snoozes its job (a 429,
// say) sends it back to waiting for the delay; the attempt is not counted,
// so a job of one attempt still runs, and no backoff applies.
func TestSnoozeDoesNotBurnAnAttempt(t *testing.T) {
	t.Parallel()
	var events []job.EventType
	calls := 0
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "api", func(ctx context.Context, _ json.RawMessage) (any, error) {
		calls++
		if calls <= 2 {
			return nil, &hopper.SnoozeError{Delay: 30 * time.Second, Err: errors.New("429 Too Many Requests")}
		}
		return "ok", nil
	}, nil)
	c := silentClient(t, hopper.Config{Workers: ws, OnEvent: func(ev hopper.Event) {
		if ev.Job.Kind == "api" {
			events = append(events, ev.Type)
		}
	}})
	ctx := context.Background()
	t0 := farFuture
	res, err := c.Enqueue(ctx, "api", nil, &hopper.EnqueueOptions{MaxAttempts: 1, RunAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	j := stepAt(t, c, t0, true)
	if j.State != hopper.StateScheduled || j.Attempt != 0 || !j.RunAt.Equal(t0.Add(30*time.Second)) || j.LastError != "" {
		t.Fatalf("after a snooze: state %s attempt %d run-at %v last error %q, want scheduled 0 at t0+30s no error",
			j.State, j.Attempt, j.RunAt.Sub(t0), j.LastError)
	}
	a := j.Attempts[len(j.Attempts)-1]
	if a.Outcome != job.OutcomeSnoozed || a.Error != "snoozed for 30s: 429 Too Many Requests" || a.Attempt != 1 {
		t.Errorf("snoozed attempt's record %+v, want outcome snoozed, error \"snoozed for 30s: 429 Too Many Requests\"", a)
	}
	stepAt(t, c, t0.Add(29*time.Second), false)
	stepAt(t, c, t0.Add(30*time.Second), true) // snoozed again
	j = stepAt(t, c, t0.Add(60*time.Second), true)
	if j.ID != res.ID || j.State != hopper.StateCompleted || j.Attempt != 1 || len(j.Attempts) != 3 {
		t.Errorf("after two snoozes and a success: state %s attempt %d, %d records; want completed, attempt 1 of 1, 3 records",
			j.State, j.Attempt, len(j.Attempts))
	}
	want := "enqueued started snoozed started snoozed started completed"
	var got []string
	for _, e := range events {
		got = append(got, string(e))
	}
	if strings.Join(got, " ") != want {
		t.Errorf("events: got %v, want %s", got, want)
	}
}

// TestSnoozeBounded: past Config.MaxSnoozes snoozes in a row, a snooze
// counts as a failed attempt, so a job that always snoozes ends dead.
func TestSnoozeBounded(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "api", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, hopper.Snooze(time.Minute)
	}, nil)
	c := silentClient(t, hopper.Config{Workers: ws, MaxSnoozes: 3})
	ctx := context.Background()
	t0 := farFuture
	fixed := backoff.Fixed(time.Second)
	if _, err := c.Enqueue(ctx, "api", nil, &hopper.EnqueueOptions{MaxAttempts: 2, RunAt: t0, Retry: &fixed}); err != nil {
		t.Fatal(err)
	}
	now := t0
	var j *hopper.Job
	for i := range 3 {
		j = stepAt(t, c, now, true)
		if j.State != hopper.StateScheduled || j.Attempt != 0 {
			t.Fatalf("snooze %d: state %s attempt %d, want scheduled 0", i+1, j.State, j.Attempt)
		}
		now = j.RunAt
	}
	j = stepAt(t, c, now, true) // the 4th in a row counts: attempt 1 fails
	if j.State != hopper.StateRetrying || j.Attempt != 1 || !strings.Contains(j.LastError, "snoozed 3 times in a row") {
		t.Fatalf("4th snooze: state %s attempt %d last error %q, want retrying, attempt 1, the limit named", j.State, j.Attempt, j.LastError)
	}
	// The failed attempt ended the run of snoozes: three more are taken,
	// then the next counts, and the job has no attempt left.
	now = j.RunAt
	for i := range 3 {
		j = stepAt(t, c, now, true)
		if j.State != hopper.StateScheduled || j.Attempt != 1 {
			t.Fatalf("snooze %d after the failure: state %s attempt %d, want scheduled 1", i+1, j.State, j.Attempt)
		}
		now = j.RunAt
	}
	if j = stepAt(t, c, now, true); j.State != hopper.StateDead || j.Attempt != 2 {
		t.Errorf("last: state %s attempt %d, want dead after attempt 2", j.State, j.Attempt)
	}
}

// TestSnoozeInThePool: a started client runs a snoozed job again after the
// delay (the dispatcher wakes for its run-at), its one attempt unburnt.
func TestSnoozeInThePool(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "api", func(ctx context.Context, _ json.RawMessage) (any, error) {
			if calls++; calls == 1 {
				return nil, hopper.Snooze(45 * time.Second)
			}
			return "ok", nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws, Defaults: hopper.EnqueueOptions{MaxAttempts: 1}})
		start := time.Now()
		j := wait(t, c, enqueue(t, c, "api", nil, nil))
		if j.State != hopper.StateCompleted || j.Attempt != 1 || calls != 2 {
			t.Fatalf("got state %s attempt %d after %d calls, want completed, attempt 1, 2 calls", j.State, j.Attempt, calls)
		}
		if got := time.Since(start); got != 45*time.Second {
			t.Errorf("took %s, want the 45s snooze", got)
		}
	})
}
