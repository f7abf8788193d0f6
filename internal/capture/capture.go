// Package capture records what one attempt of a job writes: its standard
// output and standard error (the exec kind's command's, or a handler's
// through hopper.Stdout and hopper.Stderr), each kept up to a cap, and its
// log lines (hopper.Logger), kept up to a number of lines and of bytes.
// The engine gives each attempt a Recorder and stores what it holds with
// the attempt's outcome (job.Output).
package capture

import (
	"context"
	"io"
	"log/slog"
	"sync"

	"github.com/hopperq/hopper/job"
)

// Bounds of an attempt's log (the lines a handler's hopper.Logger writes):
// lines past either are dropped, and counted in the stream's Size.
const (
	LogLines = 1000
	LogBytes = 256 << 10
)

// Recorder records one attempt's output. Its zero value records nothing
// until Init; its methods are safe for concurrent use. After Close it
// drops what it is given.
type Recorder struct {
	mu             sync.Mutex
	stdout, stderr stream
	log            stream
	lines          int
	logFull        bool // a line was dropped: the ones after it are too
	closed         bool
	tee            slog.Handler // the client's log, also given the lines (nil: none)
	job            int64        // the job's ID, kind and attempt, for tee's lines
	kind           string
	attempt        int
	logger         *slog.Logger
}

// Init prepares r to keep up to limit bytes of each of stdout and stderr
// (0: none) and the log lines of attempt att of job id, of kind, which
// also go to tee (if not nil) with those three as attributes. It
// allocates nothing: an attempt that writes nothing costs nothing more.
func (r *Recorder) Init(limit int, tee slog.Handler, id int64, kind string, att int) {
	r.stdout.limit, r.stderr.limit, r.log.limit = max(limit, 0), max(limit, 0), LogBytes
	r.tee, r.job, r.kind, r.attempt = tee, id, kind, att
}

// stream is one capped stream.
type stream struct {
	data  []byte
	size  int64
	limit int
}

// add keeps what of p fits under the limit and counts all of it.
func (s *stream) add(p []byte) {
	s.size += int64(len(p))
	if room := s.limit - len(s.data); room > 0 {
		s.data = append(s.data, p[:min(room, len(p))]...)
	}
}

func (s *stream) result() job.Stream { return job.Stream{Data: s.data, Size: s.size} }

// writer is an io.Writer to one of a Recorder's streams: it never fails,
// so a command's output is read to its end whatever is kept.
type writer struct {
	r *Recorder
	s *stream
}

func (w writer) Write(p []byte) (int, error) {
	w.r.mu.Lock()
	if !w.r.closed {
		w.s.add(p)
	}
	w.r.mu.Unlock()
	return len(p), nil
}

// Stdout returns a writer to the attempt's standard output.
func (r *Recorder) Stdout() io.Writer { return writer{r, &r.stdout} }

// Stderr returns a writer to the attempt's standard error.
func (r *Recorder) Stderr() io.Writer { return writer{r, &r.stderr} }

// logWriter takes the lines of the log's text handler, one record per
// Write: a line that would pass LogLines or LogBytes is dropped whole.
type logWriter struct{ r *Recorder }

func (w logWriter) Write(p []byte) (int, error) {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
	case r.logFull || r.lines >= LogLines || len(r.log.data)+len(p) > LogBytes:
		r.logFull = true
		r.log.size += int64(len(p))
	default:
		r.lines++
		r.log.add(p)
	}
	return len(p), nil
}

// Logger returns the attempt's logger: its lines (level Info and above, in
// slog's text format) are kept with the attempt and also go to the
// client's log, with the attempt's attributes.
func (r *Recorder) Logger() *slog.Logger {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.logger == nil {
		var h slog.Handler = slog.NewTextHandler(logWriter{r}, nil)
		if r.tee != nil {
			h = tee{h, r.tee.WithAttrs([]slog.Attr{slog.Int64("job_id", r.job), slog.String("kind", r.kind),
				slog.Int("attempt", r.attempt)})}
		}
		r.logger = slog.New(h)
	}
	return r.logger
}

// Close ends the recording and returns what was written, or nil if
// nothing was. It is called once, when the attempt ends; a goroutine the
// handler left behind writes to nothing afterwards.
func (r *Recorder) Close() *job.Output {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	o := &job.Output{Stdout: r.stdout.result(), Stderr: r.stderr.result(), Log: r.log.result()}
	if o.Empty() {
		return nil
	}
	return o
}

// tee sends records to the attempt's log and to the client's.
type tee struct{ a, b slog.Handler }

func (t tee) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t tee) Handle(ctx context.Context, rec slog.Record) error {
	var err error
	if t.a.Enabled(ctx, rec.Level) {
		err = t.a.Handle(ctx, rec.Clone())
	}
	if t.b.Enabled(ctx, rec.Level) {
		if e := t.b.Handle(ctx, rec); err == nil {
			err = e
		}
	}
	return err
}

func (t tee) WithAttrs(as []slog.Attr) slog.Handler { return tee{t.a.WithAttrs(as), t.b.WithAttrs(as)} }
func (t tee) WithGroup(name string) slog.Handler {
	return tee{t.a.WithGroup(name), t.b.WithGroup(name)}
}
