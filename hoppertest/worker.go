package hoppertest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// Worker runs one job at a time through the handlers registered on a
// Workers registry, synchronously, in the calling goroutine: a unit test
// of a handler with the retries, timeouts, snoozes and result encoding of
// Hopper around it, and no real time involved.
type Worker struct {
	cfg hopper.Config
}

// NewWorker returns a Worker for the handlers of ws, with cfg's settings
// (Defaults, MaxSnoozes, …; its Workers is ws, and its Logger, if nil,
// discards). Each Work runs on a memory client of its own.
func NewWorker(ws *hopper.Workers, cfg hopper.Config) *Worker {
	cfg.Workers = ws
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Worker{cfg: cfg}
}

// Work enqueues one job of kind with args and opts on a fresh memory
// client and runs it at now, through the kind's handler, as a started
// client would (hopper.Client.ProcessNext): the job's run-at is now unless
// opts sets one (a Delay or RunAt after now makes it not due: Work fails).
// It returns the job as the attempt left it — completed with its Result,
// retrying with its LastError and next RunAt, dead, scheduled when the
// handler snoozed it. It fails tb (Fatalf) if the job cannot be enqueued
// (an unknown kind, args that do not fit) or is not due at now.
func (w *Worker) Work(tb testing.TB, kind string, args any, opts *hopper.EnqueueOptions, now time.Time) *hopper.Job {
	tb.Helper()
	c, err := hopper.NewClient(w.cfg)
	if err != nil {
		tb.Fatalf("hoppertest.Worker: %v", err)
		return nil
	}
	defer c.StopNow()
	var o hopper.EnqueueOptions
	if opts != nil {
		o = *opts
	}
	if o.RunAt.IsZero() && o.Delay == 0 && o.Debounce.IsZero() {
		o.RunAt = now
	}
	ctx := context.Background()
	res, err := c.Enqueue(ctx, kind, args, &o)
	if err != nil {
		tb.Fatalf("hoppertest.Worker: enqueue %q: %v", kind, err)
		return nil
	}
	j, ok, err := c.ProcessNext(ctx, now)
	switch {
	case err != nil:
		tb.Fatalf("hoppertest.Worker: run job %d (%q): %v", res.ID, kind, err)
		return nil
	case !ok:
		got, _ := c.Get(ctx, res.ID)
		when := ""
		if got != nil {
			when = ": it runs at " + got.RunAt.UTC().Format(time.RFC3339Nano)
		}
		tb.Fatalf("hoppertest.Worker: job %d (%q) is not due at %s%s", res.ID, kind, now.UTC().Format(time.RFC3339Nano), when)
		return nil
	}
	return j
}
