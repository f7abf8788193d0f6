// Package job holds Hopper's domain model: the Job record, its states and the
// one function that says which state changes are allowed, the recurring
// Schedule record, and the domain errors every store translates into.
//
// It depends on the standard library and package backoff only, so every other
// package can import it.
package job

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hopperq/hopper/backoff"
)

// ID identifies a job. IDs are positive and increase in enqueue order within
// one store.
type ID int64

// Func is a job given as a plain Go closure. Only the in-memory store can
// hold one; a durable store rejects it with ErrNotDurable. Its first return
// value becomes the job's result (JSON-encoded).
type Func func(ctx context.Context) (any, error)

// DefaultQueue is the queue of a job enqueued without one.
const DefaultQueue = "default"

// Job is one unit of work and everything Hopper knows about it. Values
// returned by stores and the client are copies: changing them changes
// nothing stored.
type Job struct {
	ID   ID     `json:"id"`
	Kind string `json:"kind"` // the handler's name, e.g. "send_email"; "func" for closures
	// Args is the JSON payload handed to the handler.
	Args json.RawMessage `json:"args,omitempty"`
	// Func is set instead of a handler for closures (in-memory store only).
	Func Func `json:"-"`

	Queue    string    `json:"queue"`
	Priority int       `json:"priority"` // lower runs first; within MinPriority..MaxPriority, default 0
	RunAt    time.Time `json:"run_at"`   // the earliest time the next attempt may start

	MaxAttempts int `json:"max_attempts"` // 1 to MaxAttemptsLimit
	Attempt     int `json:"attempt"`      // attempts started so far
	// Timeout of each attempt, if the job sets one; zero uses the kind's or
	// the client's (resolved by the process that runs it), NoTimeout none.
	Timeout   time.Duration `json:"timeout,omitempty"`
	UniqueKey string        `json:"unique_key,omitempty"`
	// Key is the job's flow-control key within its queue (a tenant, a
	// customer, an API account): a queue may limit how many jobs of one
	// key run at once, pause a key or hold it for a while, and serves its
	// keys in turn (docs/flow-control.md). Empty: no key. At most
	// MaxKeySize bytes of UTF-8 without NUL (CheckKey).
	Key string `json:"key,omitempty"`
	// Debounce, with a UniqueKey, is an instruction to Enqueue, not part
	// of the record: a store does not keep it, and jobs it returns have it
	// zero. See Debounce.
	Debounce Debounce `json:"-"`
	// Retry overrides the retry policy for this job; nil uses the kind's or
	// the client's (resolved by the process that runs it).
	Retry *backoff.Policy `json:"retry,omitempty"`

	State State `json:"state"`
	// Result is the JSON result of the attempt that completed the job.
	Result json.RawMessage `json:"result,omitempty"`
	// LastError is the error of the latest failed attempt while the job
	// is waiting to retry, cancelled or dead; a completed job has none.
	LastError string    `json:"last_error,omitempty"`
	Attempts  []Attempt `json:"attempts,omitempty"` // history, oldest first

	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`  // start of the latest attempt
	FinishedAt time.Time `json:"finished_at,omitzero"` // when it became completed, cancelled or dead

	// Worker and LeaseUntil are set while running: who owns the attempt and
	// until when, unless the lease is renewed.
	Worker     string    `json:"worker,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Claims counts the job's claims: each claim adds one, whatever the
	// attempt's outcome — a snoozed or released attempt, whose number the
	// next claim uses again, counts here too — and nothing ever lowers it.
	// While the job runs it names the claim under way: stores refuse an
	// outcome or a lease renewal that names another (store.Outcome.Claim,
	// store.Lease), so a worker's outcome for an earlier claim of the job
	// never applies to a later one.
	Claims int64 `json:"claims,omitempty"`
	// Crashes counts consecutive attempts interrupted because the worker
	// died (lease expired). It resets when an attempt ends normally.
	Crashes int `json:"crashes,omitempty"`
	// CancelRequested is set when Cancel hits a running job: the worker
	// cancels the handler's context and the job ends cancelled if it fails.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// TerminateRequested, with CancelRequested, says the cancel is a
	// terminate (Terminate, an OverlapTerminate tick): the worker, in
	// whichever process, kills the handler (cause ErrTerminated; the exec
	// kind's SIGKILL) instead of cancelling it.
	TerminateRequested bool `json:"terminate_requested,omitempty"`

	// Meta is the job's metadata: string pairs that carry context with it
	// (a trace's parent, a tenant), set when it is enqueued and never
	// changed; at most MaxMetaSize bytes (CheckMeta).
	Meta map[string]string `json:"meta,omitempty"`
	// Tags label the job for filtering (List, Count by tag): at most
	// MaxTags, each a short word of letters, digits and _ - . : /
	// (CheckTags), in the order given.
	Tags []string `json:"tags,omitempty"`

	// Schedule and FireTime are set on jobs fired by a recurring schedule;
	// (Schedule, FireTime) is unique in a store. A run now of a schedule
	// (Manual) has its Schedule but no FireTime: it belongs to no tick.
	Schedule string    `json:"schedule,omitempty"`
	FireTime time.Time `json:"fire_time,omitzero"`
}

// Debounce makes an Enqueue of a job with a unique key coalesce with the
// job waiting under that key: many enqueues of one key within Period give
// one run, with the last args (store.ApplyDebounce says exactly how). The
// zero value means no debounce.
type Debounce struct {
	// Period is how long after the latest enqueue the job runs: each
	// enqueue of the key pushes the waiting job's run-at to its own time
	// plus Period. Positive when set.
	Period time.Duration
	// MaxWait, if positive, bounds the pushing: the run-at is never moved
	// past the waiting job's creation (its first enqueue) plus MaxWait.
	// Zero means no bound; otherwise at least Period.
	MaxWait time.Duration
}

// IsZero reports whether d is the zero Debounce: no debounce.
func (d Debounce) IsZero() bool { return d == Debounce{} }

// Check returns a *FieldError, its field under prefix ("debounce"),
// unless d is the zero Debounce or a valid one: Period positive, MaxWait
// zero or at least Period.
func (d Debounce) Check(prefix string) error {
	switch {
	case d.IsZero():
		return nil
	case d.Period <= 0:
		return Invalid(prefix+".period", "must be positive, got %s", d.Period)
	case d.MaxWait < 0:
		return Invalid(prefix+".max_wait", "must not be negative, got %s", d.MaxWait)
	case d.MaxWait > 0 && d.MaxWait < d.Period:
		return Invalid(prefix+".max_wait", "%s is shorter than the period %s: give a max wait of at least the period, or none", d.MaxWait, d.Period)
	}
	return nil
}

// Manual reports whether j is a manual run of its schedule (a run now,
// not a tick's job): it has a Schedule and no FireTime. Its JSON shows it
// as "manual": true.
func (j *Job) Manual() bool { return j.Schedule != "" && j.FireTime.IsZero() }

// Tick reports whether j is the job of a schedule's tick, whose
// (Schedule, FireTime) is unique in a store.
func (j *Job) Tick() bool { return j.Schedule != "" && !j.FireTime.IsZero() }

// Limits on what a job may carry. Enqueue refuses larger input with a
// *FieldError; a handler result over MaxResultSize fails the attempt
// permanently; attempt errors are cut to MaxErrorSize.
const (
	MaxArgsSize   = 1 << 20  // bytes of JSON args
	MaxResultSize = 1 << 20  // bytes of JSON result
	MaxErrorSize  = 16 << 10 // bytes of an attempt's error text
	MaxNameSize   = 255      // bytes of a kind, queue or schedule name
	MaxKeySize    = 1024     // bytes of a unique key or a flow-control key
)

// Bounds of a job's integer options, the same on every store: the
// PostgreSQL store keeps MaxAttempts (and so Attempt and Crashes, which
// never exceed it) in 32-bit columns, and a bound far below that leaves
// room to add to them. Enqueue, schedules, Reschedule and the options of
// kinds and of a Config refuse values outside them with a *FieldError.
const (
	// MaxAttemptsLimit bounds MaxAttempts: a job retried with the shortest
	// backoff for 10,000 attempts keeps retrying for days.
	MaxAttemptsLimit = 10_000
	// MinPriority and MaxPriority bound Priority: room for any ordering of
	// urgency, not for timestamps or IDs used as priorities.
	MinPriority = -1_000_000
	MaxPriority = 1_000_000
	// PriorityZero is an option's priority 0 given explicitly, where a
	// zero Priority means "unset, inherit" (hopper.Priority): a
	// schedule's Priority keeps it, and the job a tick makes gets 0. It
	// fits every store's column (int32 included) and no job has it.
	PriorityZero = -1 << 31
)

// NoTimeout is an option's Timeout of "none" given explicitly, where a zero
// Timeout means "unset, inherit" (hopper.NoTimeout): a job or a schedule
// keeps it (its JSON shows "-1ns") and its attempts run without a timeout,
// whatever the kind's, the client's or the schedule's period.
const NoTimeout time.Duration = -1

// CheckMaxAttempts returns a *FieldError for field unless n is within 1 to
// MaxAttemptsLimit.
func CheckMaxAttempts(field string, n int) error {
	if n < 1 || n > MaxAttemptsLimit {
		return Invalid(field, "must be between 1 and %d, got %d", MaxAttemptsLimit, n)
	}
	return nil
}

// CheckPriority returns a *FieldError for field unless p is within
// MinPriority to MaxPriority.
func CheckPriority(field string, p int) error {
	if p < MinPriority || p > MaxPriority {
		return Invalid(field, "must be between %d and %d, got %d", MinPriority, MaxPriority, p)
	}
	return nil
}

// The range of times a store keeps: run-at times, schedules' ticks and
// every time a caller passes in must lie within it. Stores encode times as
// Unix nanoseconds, which end in 2262.
var (
	MinTime = time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC)
	MaxTime = time.Date(2200, 12, 31, 23, 59, 59, 0, time.UTC)
)

// CheckTime returns a *FieldError for field unless t is zero or within
// [MinTime, MaxTime].
func CheckTime(field string, t time.Time) error {
	if t.IsZero() || !t.Before(MinTime) && !t.After(MaxTime) {
		return nil
	}
	return Invalid(field, "%s is outside the supported range %s to %s",
		t.Format(time.RFC3339), MinTime.Format(time.DateOnly), MaxTime.Format(time.DateOnly))
}

// CheckName returns a *FieldError for field unless s is a non-blank,
// valid UTF-8 name of at most MaxNameSize bytes without control characters
// (a name is shown in tables, logs and metric labels, and PostgreSQL
// cannot store a NUL).
func CheckName(field, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return Invalid(field, "must not be empty")
	case len(s) > MaxNameSize:
		return Invalid(field, "longer than %d bytes", MaxNameSize)
	case !utf8.ValidString(s):
		return Invalid(field, "not valid UTF-8")
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return Invalid(field, "holds a control character (%U) at byte %d", r, i)
	}
	return nil
}

// CheckArgs returns a *FieldError for field unless b is empty or valid
// JSON in valid UTF-8 of at most MaxArgsSize bytes. Bytes are kept
// exactly: invalid UTF-8 is refused rather than replaced.
func CheckArgs(field string, b []byte) error {
	switch {
	case len(b) == 0:
		return nil
	case len(b) > MaxArgsSize:
		return Invalid(field, "%d bytes, more than the limit of %d", len(b), MaxArgsSize)
	case !utf8.Valid(b):
		return Invalid(field, "not valid UTF-8")
	case !json.Valid(b):
		return Invalid(field, "not valid JSON")
	}
	return nil
}

// Clone returns a deep copy of j that shares nothing mutable with it.
func (j *Job) Clone() *Job {
	c := *j
	c.Args = cloneBytes(j.Args)
	c.Result = cloneBytes(j.Result)
	c.Attempts = cloneAttempts(j.Attempts)
	c.Retry = j.Retry.Clone()
	c.Meta = cloneMeta(j.Meta)
	c.Tags = slices.Clone(j.Tags)
	return &c
}

func cloneBytes(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

func cloneAttempts(as []Attempt) []Attempt {
	if as == nil {
		return nil
	}
	c := append([]Attempt(nil), as...)
	for i := range c {
		c[i].Result = cloneBytes(c[i].Result)
	}
	return c
}

// Validate checks a job about to be enqueued at now, naming the first bad
// field, and sets what enqueueing decides: RunAt (now if zero), State
// (scheduled or available by RunAt) and CreatedAt. Queue and MaxAttempts
// must be set: the client resolves them from the job's, the kind's and
// its own options before.
func (j *Job) Validate(now time.Time) error {
	if j.Func == nil {
		if err := CheckName("kind", j.Kind); err != nil {
			return err
		}
		if err := CheckArgs("args", j.Args); err != nil {
			return err
		}
	} else {
		if j.Kind == "" {
			j.Kind = FuncKind
		}
		if len(j.Args) > 0 {
			return Invalid("args", "a Func job takes no args")
		}
	}
	if err := CheckName("queue", j.Queue); err != nil {
		return err
	}
	if err := CheckMaxAttempts("max_attempts", j.MaxAttempts); err != nil {
		return err
	}
	if err := CheckPriority("priority", j.Priority); err != nil {
		return err
	}
	if j.Timeout < 0 && j.Timeout != NoTimeout {
		return Invalid("timeout", "must not be negative, got %s", j.Timeout)
	}
	if err := checkKeyText("unique_key", j.UniqueKey); err != nil {
		return err
	}
	if err := checkKeyText("key", j.Key); err != nil {
		return err
	}
	if j.Retry != nil {
		if err := j.Retry.Validate(); err != nil {
			return Invalid("retry", "%v", err)
		}
	}
	if err := j.Debounce.Check("debounce"); err != nil {
		return err
	}
	if !j.Debounce.IsZero() {
		switch {
		case j.UniqueKey == "":
			return Invalid("debounce", "needs a unique key: the key names what the enqueues coalesce on")
		case !j.RunAt.IsZero():
			return Invalid("run_at", "a debounced job runs its period after the latest enqueue: give no run_at or delay")
		case j.Func != nil:
			return Invalid("debounce", "a Func job cannot be debounced: it has no args to replace")
		}
		j.RunAt = now.Add(j.Debounce.Period)
	}
	if err := CheckMeta("meta", j.Meta); err != nil {
		return err
	}
	if err := CheckTags("tags", j.Tags); err != nil {
		return err
	}
	if err := CheckTime("run_at", j.RunAt); err != nil {
		return err
	}
	if j.RunAt.IsZero() {
		j.RunAt = now
	}
	j.CreatedAt = now
	j.State = WaitingState(j.RunAt, now)
	return nil
}

// checkKeyText returns a *FieldError naming field unless s is valid UTF-8
// of at most MaxKeySize bytes without a NUL byte: a unique key or a
// flow-control key (empty is fine).
func checkKeyText(field, s string) error {
	if len(s) > MaxKeySize || !utf8.ValidString(s) {
		return Invalid(field, "must be valid UTF-8 of at most %d bytes", MaxKeySize)
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return Invalid(field, "holds a NUL byte at byte %d, which PostgreSQL cannot store", i)
	}
	return nil
}

// CheckKey returns a *FieldError naming field unless key is a job's
// flow-control key (Job.Key) that is set: 1 to MaxKeySize bytes of UTF-8
// without NUL.
func CheckKey(field, key string) error {
	if key == "" {
		return Invalid(field, "missing: give the key, e.g. tenant=42")
	}
	return checkKeyText(field, key)
}

// FuncKind is the kind of jobs given as a Func. It cannot be registered.
const FuncKind = "func"
