package hopper

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/hopperq/hopper/internal/capture"
	"github.com/hopperq/hopper/internal/engine"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// What an attempt writes, re-exported from package job.
type (
	// Output is what one attempt of a job wrote: its standard output and
	// error, and its log lines; see job.Output.
	Output = job.Output
	// Stream is one stream of an Output: the bytes kept and how many were
	// written.
	Stream = job.Stream
	// OutputRetention says how many of a schedule's runs' outputs are
	// kept; see job.OutputRetention.
	OutputRetention = job.OutputRetention
)

// Bounds of an attempt's log (Logger): the lines past LogLines lines or
// LogBytes bytes are dropped and counted.
const (
	LogLines = capture.LogLines
	LogBytes = capture.LogBytes
)

// Logger returns the logger of the attempt whose handler got ctx: the
// lines it writes (level Info and above, in log/slog's text format) are
// kept with the attempt — the first LogLines of them, up to LogBytes —
// and shown with the job (Client.Outputs, hopper jobs get and jobs output,
// the API and the dashboard); they also go to the client's Config.Logger
// with the job's ID, kind and attempt. Outside a handler it returns
// slog.Default(). Safe for concurrent use; lines written after the handler
// returned are dropped.
func Logger(ctx context.Context) *slog.Logger {
	if r := engine.RecorderFromContext(ctx); r != nil {
		return r.Logger()
	}
	return slog.Default()
}

// Stdout returns a writer to the standard output of the attempt whose
// handler got ctx, kept with the attempt as the exec kind's command's is:
// its first Config.OutputLimit bytes (the kind's KindOutputLimits), the
// rest counted. Writes never fail. Outside a handler it returns
// io.Discard.
func Stdout(ctx context.Context) io.Writer {
	if r := engine.RecorderFromContext(ctx); r != nil {
		return r.Stdout()
	}
	return io.Discard
}

// Stderr is Stdout for the attempt's standard error.
func Stderr(ctx context.Context) io.Writer {
	if r := engine.RecorderFromContext(ctx); r != nil {
		return r.Stderr()
	}
	return io.Discard
}

// outputLimit is the cap of each of the stdout and stderr of an attempt of
// kind (0: none kept).
func (c *Client) outputLimit(kind string) int {
	if n, ok := c.cfg.KindOutputLimits[kind]; ok && n != 0 {
		return max(n, 0)
	}
	return c.cfg.OutputLimit
}

// Outputs returns the outputs of job id's attempts that wrote anything,
// ordered by attempt: none if there are none, or no such job (Get tells
// them apart). Outputs are kept apart from the job and deleted with it; a
// schedule's runs keep theirs by the schedule's OutputRetention.
func (c *Client) Outputs(ctx context.Context, id ID) ([]*Output, error) {
	return c.store.Outputs(ctx, store.OutputsParams{ID: id})
}

// Output returns the output of attempt att of job id, or of its latest
// attempt that wrote any if att is 0. It returns ErrNotFound if there is
// no such job, or no such output (the attempt wrote nothing, has not
// ended, or its output was pruned).
func (c *Client) Output(ctx context.Context, id ID, att int) (*Output, error) {
	if att < 0 {
		return nil, fieldErr("attempt", "must not be negative, got %d", att)
	}
	outs, err := c.store.Outputs(ctx, store.OutputsParams{ID: id, Attempt: att})
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		j, err := c.store.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if att == 0 {
			return nil, fmt.Errorf("job %d: no attempt output: %w", j.ID, ErrNotFound)
		}
		return nil, fmt.Errorf("job %d attempt %d: no output: %w", j.ID, att, ErrNotFound)
	}
	return outs[len(outs)-1], nil
}
