package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/job"
)

// Duration is a duration in a document: a Go duration string or a number
// of seconds.
type Duration = jsondur.Duration

// Options are a job's options as a document gives them: a job request's
// and a schedule's. A field left out (nil) is unset; one given is checked
// by Given.
type Options struct {
	Queue       *string         `json:"queue"`
	Priority    *int            `json:"priority"`
	MaxAttempts *int            `json:"max_attempts"`
	Timeout     *Duration       `json:"timeout"`
	Retry       json.RawMessage `json:"retry"`
	// Meta and Tags are the job's metadata and tags (job.CheckMeta,
	// job.CheckTags); a schedule gives them to every job it fires.
	Meta map[string]string `json:"meta"`
	Tags []string          `json:"tags"`
	// MetaPairs are metadata as the command's --meta flags give them,
	// "key=value" each, added to Meta.
	MetaPairs []string `json:"-"`
}

// Job is a job request: POST /api/v1/jobs, an item of /jobs/batch, a line
// of enqueue --bulk, and the flags of enqueue.
type Job struct {
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args"`
	Options
	Delay     *Duration `json:"delay"`
	RunAt     *string   `json:"run_at"`
	UniqueKey *string   `json:"unique_key"`
	// Key is the job's flow-control key (hopper.EnqueueOptions.Key).
	Key *string `json:"key"`
	// Debounce, with unique_key, coalesces the enqueues of the key
	// (hopper.EnqueueOptions.Debounce).
	Debounce *Debounce `json:"debounce"`
	// RetryBackoff is the compact retry policy of older --bulk lines.
	//
	// Deprecated: give retry, which takes the compact string too.
	RetryBackoff *string `json:"retry_backoff"`
}

// Debounce is a job request's debounce: {"period": "5s", "max_wait":
// "1m"}, each a Go duration string or a number of seconds.
type Debounce struct {
	Period  *Duration `json:"period"`
	MaxWait *Duration `json:"max_wait"`
}

// options returns the hopper.Debounce d describes.
func (d *Debounce) options() (hopper.Debounce, error) {
	var out hopper.Debounce
	if d.Period == nil {
		return out, job.Invalid("debounce.period", "missing: a debounce needs its period, e.g. \"5s\"")
	}
	if err := Given("debounce.period", d.Period.D() <= 0, "", d.Period.D()); err != nil {
		return out, err
	}
	out.Period = d.Period.D()
	if d.MaxWait != nil {
		if err := Given("debounce.max_wait", d.MaxWait.D() <= 0, "no max wait", d.MaxWait.D()); err != nil {
			return out, err
		}
		out.MaxWait = d.MaxWait.D()
	}
	return out, nil
}

// Request checks j and returns the request it describes, at now (what a
// delay counts from). Its *job.FieldError names the field.
func (j *Job) Request(now time.Time) (hopper.EnqueueRequest, error) {
	var none hopper.EnqueueRequest
	if strings.TrimSpace(j.Kind) == "" {
		return none, job.Invalid("kind", "missing: every job has a kind, the name of its handler")
	}
	if j.RetryBackoff != nil {
		if j.Retry != nil {
			return none, job.Invalid("retry_backoff", "give retry (retry_backoff is its older name), not both")
		}
		j.Retry, _ = json.Marshal(*j.RetryBackoff)
	}
	o, err := j.Options.options()
	if err != nil {
		return none, err
	}
	if o.RunAt, err = runTime(j.Delay, j.RunAt, now); err != nil {
		return none, err
	}
	if j.UniqueKey != nil {
		if err := Given("unique_key", *j.UniqueKey == "", "a job without one"); err != nil {
			return none, err
		}
		o.UniqueKey = *j.UniqueKey
	}
	if j.Key != nil {
		if err := Given("key", *j.Key == "", "a job without one"); err != nil {
			return none, err
		}
		o.Key = *j.Key
	}
	if j.Debounce != nil {
		if o.Debounce, err = j.Debounce.options(); err != nil {
			return none, err
		}
	}
	var args any
	if len(j.Args) > 0 && string(j.Args) != "null" {
		args = j.Args // kept byte for byte
	}
	return hopper.EnqueueRequest{Kind: j.Kind, Args: args, Options: o}, nil
}

// Requests is Request for a batch: an error names its item (InBatch,
// Index), as EnqueueMany's do.
func Requests(jobs []Job, now time.Time) ([]hopper.EnqueueRequest, error) {
	reqs := make([]hopper.EnqueueRequest, len(jobs))
	for i := range jobs {
		r, err := jobs[i].Request(now)
		if err != nil {
			return nil, at(err, i)
		}
		reqs[i] = r
	}
	return reqs, nil
}

// at places err, a *job.FieldError, at item i of a batch.
func at(err error, i int) error {
	if fe, ok := err.(*job.FieldError); ok {
		return fe.At(i)
	}
	return err
}

// options returns the EnqueueOptions o describes. A priority or a timeout
// given as 0 is that zero (hopper.Priority(0), hopper.NoTimeout), over the
// kind's and the client's: for them zero is a value.
func (o *Options) options() (*hopper.EnqueueOptions, error) {
	out := &hopper.EnqueueOptions{}
	if o.Queue != nil {
		if err := Given("queue", strings.TrimSpace(*o.Queue) == "", `the queue "default"`); err != nil {
			return nil, err
		}
		out.Queue = *o.Queue
	}
	if o.Priority != nil {
		out.Priority = hopper.Priority(*o.Priority) // 0 given is the priority 0
	}
	if o.MaxAttempts != nil {
		if err := Given("max_attempts", *o.MaxAttempts < 1, fmt.Sprintf("the default, %d", hopper.DefaultMaxAttempts), *o.MaxAttempts); err != nil {
			return nil, err
		}
		out.MaxAttempts = *o.MaxAttempts
	}
	if o.Timeout != nil {
		switch d := o.Timeout.D(); {
		case d < 0:
			return nil, job.Invalid("timeout", "must not be negative, got %s (0 is no timeout)", d)
		case d == 0:
			out.Timeout = hopper.NoTimeout // over the kind's, or a schedule's period
		default:
			out.Timeout = d
		}
	}
	if len(o.Retry) > 0 && string(o.Retry) != "null" {
		p, err := DecodeRetry(o.Retry, "retry")
		if err != nil {
			return nil, err
		}
		out.Retry = p
	}
	if len(o.Meta) > 0 || len(o.MetaPairs) > 0 {
		out.Meta = make(map[string]string, len(o.Meta)+len(o.MetaPairs))
		for k, v := range o.Meta {
			out.Meta[k] = v
		}
		for _, kv := range o.MetaPairs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return nil, job.Invalid("meta", "%q: want key=value", kv)
			}
			out.Meta[k] = v
		}
		if err := job.CheckMeta("meta", out.Meta); err != nil {
			return nil, err
		}
	}
	if len(o.Tags) > 0 {
		if err := job.CheckTags("tags", o.Tags); err != nil {
			return nil, err
		}
		out.Tags = o.Tags
	}
	return out, nil
}

// Given is the explicit-zero rule, for a field a document gives: a value
// the library reads as "unset" (unset: an empty string, a zero or negative
// count or duration) would silently become a default, so it is refused,
// naming the field and what leaving it out gives (leave; "" when leaving
// it out is no remedy). got, if given, is the value, for the message.
func Given(field string, unset bool, leave string, got ...any) error {
	if !unset {
		return nil
	}
	hint := ""
	if leave != "" {
		hint = " (leave it out for " + leave + ")"
	}
	if len(got) == 0 {
		return job.Invalid(field, "must not be empty%s", hint)
	}
	return job.Invalid(field, "must be positive, got %v%s", got[0], hint)
}

// ParseTime reads an RFC 3339 time for field, within the range stores keep
// (1970 to 2200).
func ParseTime(field, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, job.Invalid(field, "want a time such as 2030-01-02T15:04:05Z (RFC 3339), got %q", s)
	}
	if err := job.CheckTime(field, t); err != nil {
		return time.Time{}, err
	}
	return t, nil
}

// ParseDuration reads a Go duration string for field (what a form or a
// query parameter gives), or a number of seconds.
func ParseDuration(field, s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, err := jsondur.ParseString(s)
	if err != nil {
		if d, err := jsondur.Parse([]byte(s)); err == nil && s != "" && s[0] != '"' {
			return d, nil
		}
		return 0, job.Invalid(field, "%q is not a duration: want %s", s, jsondur.Want)
	}
	return d, nil
}

// runTime is the run time a document gives as a delay from now or as
// run_at (zero: neither), one or the other: a delay must not be negative
// and both must fall in the range stores keep.
func runTime(delay *Duration, runAt *string, now time.Time) (time.Time, error) {
	switch {
	case delay != nil && runAt != nil:
		return time.Time{}, job.Invalid("delay", "give delay or run_at, not both")
	case runAt != nil:
		return ParseTime("run_at", *runAt)
	case delay == nil:
		return time.Time{}, nil
	case delay.D() < 0:
		return time.Time{}, job.Invalid("delay", "must not be negative, got %s", delay.D())
	}
	t := now.Add(delay.D())
	return t, job.CheckTime("delay", t)
}

// Reschedule is a reschedule request: POST /api/v1/jobs/{id}/reschedule
// and the flags of jobs reschedule. A delay of 0 is now.
type Reschedule struct {
	RunAt    *string   `json:"run_at"`
	Delay    *Duration `json:"delay"`
	Priority *int      `json:"priority"`
}

// Args returns Client.Reschedule's run time (zero: unchanged) and
// priority (nil: unchanged) at now.
func (r *Reschedule) Args(now time.Time) (time.Time, *int, error) {
	if r.RunAt == nil && r.Delay == nil && r.Priority == nil {
		return time.Time{}, nil, job.Invalid("run_at", "give run_at, delay or priority")
	}
	t, err := runTime(r.Delay, r.RunAt, now)
	return t, r.Priority, err
}
