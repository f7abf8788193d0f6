package job

import (
	"fmt"
	"time"
)

// Output is what one attempt of a job wrote: its standard output and
// standard error (an exec job's command's, or what a handler wrote to
// hopper.Stdout and hopper.Stderr) and its log lines (hopper.Logger). Each
// stream keeps its first bytes up to a cap; Size counts all it was given.
// Stores keep it apart from the job's row, compressed, and delete it with
// the job (and, for a schedule's runs, by the schedule's OutputRetention).
type Output struct {
	ID      ID  `json:"id"`
	Attempt int `json:"attempt"`
	// Schedule is the job's schedule, if a schedule fired it.
	Schedule string `json:"schedule,omitempty"`
	// Succeeded reports that the attempt completed the job; every other
	// outcome (a failure, a cancel, a snooze, a release) is a failed run
	// for OutputRetention.
	Succeeded  bool      `json:"succeeded"`
	FinishedAt time.Time `json:"finished_at"`
	Stdout     Stream    `json:"stdout"`
	Stderr     Stream    `json:"stderr"`
	Log        Stream    `json:"log"`
}

// Stream is one stream of an Output: the bytes kept (the first ones) and
// how many were written in all.
type Stream struct {
	Data []byte `json:"data,omitempty"`
	// Size is the number of bytes written to the stream, those dropped
	// over its cap included: at least len(Data).
	Size int64 `json:"size"`
}

// Truncated reports whether bytes written to s were dropped over its cap.
func (s Stream) Truncated() bool { return s.Size > int64(len(s.Data)) }

// Dropped returns how many bytes written to s were dropped over its cap.
func (s Stream) Dropped() int64 { return max(s.Size-int64(len(s.Data)), 0) }

// Empty reports whether nothing was written to s.
func (s Stream) Empty() bool { return s.Size == 0 && len(s.Data) == 0 }

// TruncationNote returns the line a view shows after the kept bytes of a
// truncated stream, such as "[… 1048576 more bytes not kept]", or "" if
// nothing was dropped.
func (s Stream) TruncationNote() string {
	if !s.Truncated() {
		return ""
	}
	return fmt.Sprintf("[… %d more bytes not kept: the stream's cap is %d bytes]", s.Dropped(), len(s.Data))
}

// Empty reports whether the attempt wrote nothing to any stream.
func (o *Output) Empty() bool { return o.Stdout.Empty() && o.Stderr.Empty() && o.Log.Empty() }

// StreamNames are the names of an Output's streams, in the order views
// show them: the names the CLI's --stream and the API's stream parameter
// take.
var StreamNames = []string{"stdout", "stderr", "log"}

// Stream returns the stream of o named name (one of StreamNames), or a
// *FieldError on "stream".
func (o *Output) Stream(name string) (Stream, error) {
	switch name {
	case "stdout":
		return o.Stdout, nil
	case "stderr":
		return o.Stderr, nil
	case "log":
		return o.Log, nil
	}
	return Stream{}, Invalid("stream", "%q: want stdout, stderr or log", name)
}

// OutputRetention says how many of a schedule's attempt outputs are kept
// (the job keeps its own until it is deleted): the newest Succeeded of the
// attempts that completed a job and the newest Failed of the others, none
// older than MaxAge. A zero field takes its default (OutputKeepSucceeded,
// OutputKeepFailed, no age limit); a negative count keeps none.
type OutputRetention struct {
	Succeeded int           `json:"succeeded,omitempty"`
	Failed    int           `json:"failed,omitempty"`
	MaxAge    time.Duration `json:"max_age,omitempty"`
}

// Defaults of OutputRetention: more failures than successes are kept, as
// a failure's output is the one read.
const (
	OutputKeepSucceeded = 3
	OutputKeepFailed    = 10
)

// Resolved returns r with its defaults applied: counts from 0 up (0:
// none kept), MaxAge 0 for no limit.
func (r OutputRetention) Resolved() OutputRetention {
	count := func(n, def int) int {
		switch {
		case n == 0:
			return def
		case n < 0:
			return 0
		}
		return n
	}
	return OutputRetention{Succeeded: count(r.Succeeded, OutputKeepSucceeded), Failed: count(r.Failed, OutputKeepFailed), MaxAge: max(r.MaxAge, 0)}
}

// String describes the outputs r keeps, its defaults applied: "the newest
// 3 successful and 10 failed runs", with ", at most 168h old" for a
// MaxAge.
func (r OutputRetention) String() string {
	v := r.Resolved()
	s := fmt.Sprintf("the newest %d successful and %d failed runs", v.Succeeded, v.Failed)
	if v.MaxAge > 0 {
		s += ", at most " + shortDuration(v.MaxAge) + " old"
	}
	return s
}

// Check returns a *FieldError unless r's MaxAge is not negative.
func (r OutputRetention) Check(field string) error {
	if r.MaxAge < 0 {
		return Invalid(field+".max_age", "must not be negative, got %s", r.MaxAge)
	}
	return nil
}
