package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDecide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	set := Settings{Retry: backoff.Fixed(5 * time.Second), MaxSnoozes: 2}
	boom := errors.New("boom")
	snoozed := []job.Attempt{{Outcome: "retrying"}, {Outcome: job.OutcomeSnoozed}, {Outcome: job.OutcomeReleased}, {Outcome: job.OutcomeSnoozed}}
	half := func() float64 { return 0.5 }
	for _, tc := range []struct {
		name   string
		j      job.Job
		err    error
		cause  error
		want   job.State
		runAt  time.Time
		record string
	}{
		{"success", job.Job{Attempt: 1, MaxAttempts: 3}, nil, nil, job.StateCompleted, time.Time{}, "completed"},
		{"success after cancel counts", job.Job{Attempt: 1, MaxAttempts: 3}, nil, errCancelRequested, job.StateCompleted, time.Time{}, "completed"},
		{"failure with attempts left", job.Job{Attempt: 1, MaxAttempts: 3}, boom, nil, job.StateRetrying, now.Add(5 * time.Second), "retrying"},
		{"failure on last attempt", job.Job{Attempt: 3, MaxAttempts: 3}, boom, nil, job.StateDead, time.Time{}, "dead"},
		{"permanent on first attempt", job.Job{Attempt: 1, MaxAttempts: 25}, job.Permanent(boom), nil, job.StateDead, time.Time{}, "dead"},
		{"cancelled while running", job.Job{Attempt: 1, MaxAttempts: 3}, boom, errCancelRequested, job.StateCancelled, time.Time{}, "cancelled"},
		{"cancel learned from the store", job.Job{Attempt: 1, MaxAttempts: 3, CancelRequested: true}, boom, nil, job.StateCancelled, time.Time{}, "cancelled"},
		{"shutdown releases", job.Job{Attempt: 2, MaxAttempts: 3}, boom, errShutdown, job.StateAvailable, time.Time{}, job.OutcomeReleased},
		{"shutdown beats exhaustion", job.Job{Attempt: 3, MaxAttempts: 3}, boom, errShutdown, job.StateAvailable, time.Time{}, job.OutcomeReleased},
		{"lost lease gives back", job.Job{Attempt: 1, MaxAttempts: 3}, boom, errLeaseLost, job.StateAvailable, time.Time{}, job.OutcomeReleased},
		{"snooze on the last attempt", job.Job{Attempt: 3, MaxAttempts: 3}, job.Snooze(time.Minute), nil, job.StateScheduled, now.Add(time.Minute), job.OutcomeSnoozed},
		{"snooze wrapped", job.Job{Attempt: 1, MaxAttempts: 3, Attempts: snoozed[:2]}, fmt.Errorf("api: %w", job.Snooze(time.Second)), nil, job.StateScheduled, now.Add(time.Second), job.OutcomeSnoozed},
		{"snooze past the limit fails", job.Job{Attempt: 1, MaxAttempts: 3, Attempts: snoozed}, job.Snooze(time.Minute), nil, job.StateRetrying, now.Add(5 * time.Second), "retrying"},
		{"snooze past the limit on the last attempt", job.Job{Attempt: 3, MaxAttempts: 3, Attempts: snoozed}, job.Snooze(time.Minute), nil, job.StateDead, time.Time{}, "dead"},
		{"cancel beats snooze", job.Job{Attempt: 1, MaxAttempts: 3}, job.Snooze(time.Minute), errCancelRequested, job.StateCancelled, time.Time{}, "cancelled"},
		{"shutdown beats snooze", job.Job{Attempt: 1, MaxAttempts: 3}, job.Snooze(time.Minute), errShutdown, job.StateAvailable, time.Time{}, job.OutcomeReleased},
	} {
		tc.j.Claims = int64(tc.j.Attempt) + 4 // a claim number of its own, as after snoozes
		o := decide(&tc.j, set, nil, tc.err, tc.cause, time.Second, now, half)
		if o.State != tc.want || !o.RunAt.Equal(tc.runAt) || o.Record.Outcome != tc.record {
			t.Errorf("%s: got %s run-at %v record %q, want %s %v %q", tc.name, o.State, o.RunAt, o.Record.Outcome, tc.want, tc.runAt, tc.record)
		}
		if o.Attempt != tc.j.Attempt || o.Claim != tc.j.Claims {
			t.Errorf("%s: outcome fences attempt %d claim %d, want %d %d", tc.name, o.Attempt, o.Claim, tc.j.Attempt, tc.j.Claims)
		}
		if tc.err != nil && tc.want != job.StateAvailable && tc.want != job.StateScheduled && o.Error == "" {
			t.Errorf("%s: the error was not recorded", tc.name)
		}
	}
}

func TestDecideKeepsResultsAndBoundsThem(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	set := Settings{Retry: backoff.Fixed(time.Second)}
	j := &job.Job{Attempt: 1, MaxAttempts: 3}
	o := decide(j, set, []byte(`{"exit_code":3}`), errors.New("exit code 3"), nil, 0, now, func() float64 { return 0 })
	if o.State != job.StateRetrying || string(o.Record.Result) != `{"exit_code":3}` || o.Result != nil {
		t.Errorf("failure with a result: state %s record result %s job result %s", o.State, o.Record.Result, o.Result)
	}
	big := []byte(`"` + strings.Repeat("x", job.MaxResultSize) + `"`)
	if o := decide(j, set, big, nil, nil, 0, now, nil); o.State != job.StateDead || o.Result != nil || !strings.Contains(o.Error, "limit") {
		t.Errorf("oversized result: state %s error %q", o.State, o.Error)
	}
	long := errors.New(strings.Repeat("é", job.MaxErrorSize))
	o = decide(j, set, nil, long, nil, 0, now, func() float64 { return 0 })
	if len(o.Error) > job.MaxErrorSize || !utf8.ValidString(o.Error) || !strings.HasSuffix(o.Error, "(truncated)") {
		t.Errorf("long error: %d bytes, valid %v, ends %q", len(o.Error), utf8.ValidString(o.Error), o.Error[len(o.Error)-20:])
	}
}

func TestDecideDecorrelatedReadsPreviousBackoff(t *testing.T) {
	t.Parallel()
	j := &job.Job{Attempt: 2, MaxAttempts: 5, Attempts: []job.Attempt{{Attempt: 1, Backoff: 10 * time.Second}}}
	o := decide(j, Settings{Retry: backoff.Decorrelated(time.Second, time.Hour)}, nil, errors.New("x"), nil, 0, time.Time{}, func() float64 { return 1 })
	if o.Record.Backoff != 30*time.Second {
		t.Errorf("backoff %s, want 3 × the previous 10s", o.Record.Backoff)
	}
}

func TestRunRecoversPanicsAndTimesOut(t *testing.T) {
	t.Parallel()
	_, _, err, _ := new(Engine).runHandler(context.Background(), &job.Job{}, func(context.Context, *job.Job) ([]byte, error) { panic("oops") }, Settings{})
	if err == nil || !strings.HasPrefix(err.Error(), "panic: oops") {
		t.Errorf("panic: got %v", err)
	}
	synctest.Test(t, func(t *testing.T) {
		_, _, err, cause := new(Engine).runHandler(context.Background(), &job.Job{}, func(ctx context.Context, _ *job.Job) ([]byte, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, Settings{Timeout: time.Minute})
		if !errors.Is(cause, ErrTimeout) || !strings.Contains(err.Error(), "timed out after 1m0s") {
			t.Errorf("timeout: got %v (cause %v)", err, cause)
		}
	})
	j := &job.Job{ID: 9}
	new(Engine).runHandler(context.Background(), j, func(ctx context.Context, _ *job.Job) ([]byte, error) {
		if JobFromContext(ctx) != j {
			t.Error("JobFromContext: not the running job")
		}
		return nil, nil
	}, Settings{})
}
