package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/logtest"
)

// TestAttemptOutputAndLog: a handler's log lines (Logger) and what it
// writes to Stdout and Stderr are kept per attempt, on failure and on
// success, and its log lines also reach the client's log, naming the job.
func TestAttemptOutputAndLog(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var clientLog logtest.Buffer
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "greet", func(ctx context.Context, _ json.RawMessage) (any, error) {
			att := hopper.JobFromContext(ctx).Attempt
			hopper.Logger(ctx).Info("hello", "name", "<b>world</b>", "try", att)
			fmt.Fprintf(hopper.Stdout(ctx), "out %d\n", att)
			fmt.Fprintf(hopper.Stderr(ctx), "err %d\n", att)
			if att == 1 {
				return nil, errors.New("first try fails")
			}
			return nil, nil
		}, &hopper.EnqueueOptions{MaxAttempts: 2})
		c := silentClient(t, hopper.Config{Workers: ws, Logger: slog.New(slog.NewTextHandler(&clientLog, nil))})
		ctx := context.Background()
		res, err := c.Enqueue(ctx, "greet", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		startClient(t, c)
		if j := waitDone(t, c, res.ID); j.State != hopper.StateCompleted {
			t.Fatalf("job %s, want completed", j.State)
		}
		outs, err := c.Outputs(ctx, res.ID)
		if err != nil || len(outs) != 2 {
			t.Fatalf("Outputs: got %d, %v; want 2", len(outs), err)
		}
		for i, o := range outs {
			att := i + 1
			if o.Attempt != att || o.Succeeded != (att == 2) {
				t.Errorf("output %d: attempt %d succeeded %v", i, o.Attempt, o.Succeeded)
			}
			if got, want := string(o.Stdout.Data), fmt.Sprintf("out %d\n", att); got != want {
				t.Errorf("attempt %d stdout: got %q, want %q", att, got, want)
			}
			if got, want := string(o.Stderr.Data), fmt.Sprintf("err %d\n", att); got != want {
				t.Errorf("attempt %d stderr: got %q, want %q", att, got, want)
			}
			if log := string(o.Log.Data); !strings.Contains(log, `level=INFO msg=hello name=<b>world</b> try=`+fmt.Sprint(att)) {
				t.Errorf("attempt %d log: got %q", att, log)
			}
		}
		last, err := c.Output(ctx, res.ID, 0)
		if err != nil || last.Attempt != 2 {
			t.Errorf("Output(latest): got %+v, %v; want attempt 2", last, err)
		}
		if lines := clientLog.Lines("msg=hello", fmt.Sprintf("job_id=%d", res.ID), "kind=greet", "attempt=2"); len(lines) != 1 {
			t.Errorf("client log: got %d lines of attempt 2, want 1:\n%s", len(lines), clientLog.String())
		}
		stopGracefully(t, c)
	})
}

// TestAttemptOutputBounds: the log keeps LogLines lines and counts the
// rest; stdout keeps Config.OutputLimit bytes, a kind's KindOutputLimits
// override it, and an attempt that wrote nothing keeps no output.
func TestAttemptOutputBounds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		chatty := func(ctx context.Context, _ json.RawMessage) (any, error) {
			for i := range hopper.LogLines + 500 {
				hopper.Logger(ctx).Info("line", "n", i)
			}
			io.WriteString(hopper.Stdout(ctx), strings.Repeat("x", 100))
			return nil, nil
		}
		hopper.RegisterRaw(ws, "chatty", chatty, nil)
		hopper.RegisterRaw(ws, "quiet", chatty, nil)
		hopper.RegisterRaw(ws, "silent", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
		c := silentClient(t, hopper.Config{Workers: ws, OutputLimit: 10, KindOutputLimits: map[string]int{"quiet": -1}})
		ctx := context.Background()
		ids := map[string]hopper.ID{}
		for _, k := range []string{"chatty", "quiet", "silent"} {
			res, err := c.Enqueue(ctx, k, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids[k] = res.ID
		}
		startClient(t, c)
		for _, id := range ids {
			waitDone(t, c, id)
		}
		defer stopGracefully(t, c)
		o, err := c.Output(ctx, ids["chatty"], 1)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(o.Log.Data), "\n"); n != hopper.LogLines || !o.Log.Truncated() {
			t.Errorf("log: got %d lines (truncated %v, size %d), want %d and truncated", n, o.Log.Truncated(), o.Log.Size, hopper.LogLines)
		}
		if !strings.Contains(string(o.Log.Data), "n=999\n") || strings.Contains(string(o.Log.Data), "n=1000\n") {
			t.Error("log: want the first lines kept, up to n=999")
		}
		if string(o.Stdout.Data) != "xxxxxxxxxx" || o.Stdout.Size != 100 || o.Stdout.TruncationNote() == "" {
			t.Errorf("stdout: got %q of %d, want 10 bytes of 100 with a truncation note", o.Stdout.Data, o.Stdout.Size)
		}
		if o, err := c.Output(ctx, ids["quiet"], 1); err != nil || len(o.Stdout.Data) != 0 || o.Stdout.Size != 100 || o.Log.Empty() {
			t.Errorf("a kind keeping no stdout: got %v; want its log, and 100 bytes of stdout counted, none kept", err)
		}
		if _, err := c.Output(ctx, ids["silent"], 0); !errors.Is(err, hopper.ErrNotFound) {
			t.Errorf("Output of an attempt that wrote nothing: got %v, want ErrNotFound", err)
		}
		if _, err := c.Output(ctx, 999_999, 0); !errors.Is(err, hopper.ErrNotFound) {
			t.Errorf("Output of a missing job: got %v, want ErrNotFound", err)
		}
	})
}

// TestLoggerOutsideHandler: outside a handler Logger is the default
// logger and the output writers discard.
func TestLoggerOutsideHandler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if hopper.Logger(ctx) != slog.Default() || hopper.Stdout(ctx) != io.Discard || hopper.Stderr(ctx) != io.Discard {
		t.Error("outside a handler: want slog.Default() and io.Discard")
	}
}

// TestScheduleOutputRetention: the maintenance cleaner prunes a
// schedule's runs' outputs by its OutputRetention, keeping the newest;
// the jobs stay.
func TestScheduleOutputRetention(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "tick", func(ctx context.Context, _ json.RawMessage) (any, error) {
			fmt.Fprintln(hopper.Stdout(ctx), "ran")
			return nil, nil
		}, nil)
		c := silentClient(t, hopper.Config{Workers: ws})
		ctx := context.Background()
		if _, err := c.AddSchedule(ctx, "often", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick",
			OutputRetention: hopper.OutputRetention{Succeeded: 2}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AddSchedule(ctx, "bad", hopper.ScheduleOptions{Every: time.Minute, Kind: "tick",
			OutputRetention: hopper.OutputRetention{MaxAge: -time.Second}}); err == nil {
			t.Error("AddSchedule with a negative max age: want an error")
		}
		startClient(t, c)
		time.Sleep(10*time.Minute + 30*time.Second) // fake time: 10 ticks, and the cleaner's runs
		synctest.Wait()
		jobs, err := c.List(ctx, hopper.ListOptions{States: []hopper.State{hopper.StateCompleted}})
		if err != nil || len(jobs) < 9 {
			t.Fatalf("completed runs: got %d, %v; want at least 9", len(jobs), err)
		}
		kept := 0
		for i, j := range jobs {
			outs, err := c.Outputs(ctx, j.ID)
			if err != nil {
				t.Fatal(err)
			}
			kept += len(outs)
			if len(outs) == 1 && i < len(jobs)-3 {
				t.Errorf("run %d of %d (job %d) kept its output; want only the newest", i+1, len(jobs), j.ID)
			}
		}
		if kept < 2 || kept > 3 { // the newest 2, and at most one more since the last cleaning
			t.Errorf("outputs kept: got %d, want 2 (or 3 before the next cleaning)", kept)
		}
		stopGracefully(t, c)
	})
}
