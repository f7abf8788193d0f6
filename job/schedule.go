package job

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/schedule"
)

// Overlap says what a recurring schedule does when a tick comes while the job
// of its previous tick has not finished.
type Overlap uint8

const (
	// OverlapSkip (the default): at most one job of the schedule is
	// waiting or running at a time. A tick that comes while the previous
	// job runs or is about to run (available) is skipped; a previous job
	// still waiting to retry is superseded: it goes to the dead-letter
	// queue and the tick fires, so a failing job never blocks its
	// schedule.
	OverlapSkip Overlap = iota
	// OverlapAllow fires anyway.
	OverlapAllow
	// OverlapCancel (Kubernetes' Replace) fires, and cancels the
	// schedule's previous job if it has not finished: a waiting one ends
	// cancelled at once; a running one's handler context is cancelled
	// (an exec job's process group is sent SIGTERM, then SIGKILL after
	// its grace) and it ends cancelled. The newest tick wins. It does not
	// apply to fixed-delay schedules, which wait for their job.
	OverlapCancel
	// OverlapBufferOne: a tick that comes while the schedule's previous
	// job is unfinished (waiting, retrying or running) is buffered, and
	// fires when that job finishes; at most one run is buffered, and the
	// ticks that come while one is are skipped and counted
	// (SkippedTicks). Not with fixed delay.
	OverlapBufferOne
	// OverlapBufferAll: as OverlapBufferOne, but every such tick is
	// buffered (up to MaxBuffered; past it they are skipped and counted)
	// and they fire in order, one at a time, each when the one before
	// finished. Not with fixed delay.
	OverlapBufferAll
	// OverlapTerminate: as OverlapCancel, but the running job is killed:
	// its handler's context is cancelled with the cause ErrTerminated
	// (an exec job's process group gets SIGKILL at once). Not with fixed
	// delay.
	OverlapTerminate
)

// MaxBuffered bounds the runs an OverlapBufferAll schedule keeps waiting
// (Schedule.Buffered): a hung job on a schedule of every second would
// otherwise grow its row without end. The ticks past it are skipped and
// counted.
const MaxBuffered = 1000

// overlapNames are the stored and JSON names of the Overlap constants, in
// their order.
var overlapNames = [...]string{"skip", "allow", "cancel", "buffer-one", "buffer-all", "terminate"}

// String returns "skip", "allow", "cancel", "buffer-one", "buffer-all" or
// "terminate" (the stored and JSON names).
func (o Overlap) String() string {
	if !o.Valid() {
		return "skip"
	}
	return overlapNames[o]
}

// Valid reports whether o is one of the Overlap constants.
func (o Overlap) Valid() bool { return int(o) < len(overlapNames) }

// Cancels reports whether o cancels the previous job at each tick
// (OverlapCancel, OverlapTerminate).
func (o Overlap) Cancels() bool { return o == OverlapCancel || o == OverlapTerminate }

// Buffer returns how many runs o keeps waiting while the previous job is
// unfinished: 1 for OverlapBufferOne, MaxBuffered for OverlapBufferAll,
// 0 for the others.
func (o Overlap) Buffer() int {
	switch o {
	case OverlapBufferOne:
		return 1
	case OverlapBufferAll:
		return MaxBuffered
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler: the name String returns.
func (o Overlap) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler; it takes the names
// String returns, and buffer_one and buffer_all too.
func (o *Overlap) UnmarshalText(b []byte) error {
	name := strings.ReplaceAll(string(b), "_", "-")
	for i, n := range overlapNames {
		if n == name {
			*o = Overlap(i)
			return nil
		}
	}
	return fmt.Errorf("overlap %q: want skip, allow, cancel, buffer-one, buffer-all or terminate", b)
}

// CatchUp says what a recurring schedule does with the ticks it missed
// while no server fired schedules: ticks at or before now that a later
// tick, also at or before now, followed.
type CatchUp uint8

const (
	// CatchUpOne (the default): one run, for the earliest missed tick;
	// the schedule then continues from its first tick after now.
	CatchUpOne CatchUp = iota
	// CatchUpNone runs no missed tick: the schedule continues from its
	// first tick after now.
	CatchUpNone
	// CatchUpLatest runs the latest missed tick only.
	CatchUpLatest
	// CatchUpAll runs every missed tick within CatchUpWindow before now,
	// oldest first, at most CatchUpMax of them (the latest ones); the
	// ticks over the cap are not run, and a warning says so. Its runs are
	// fired whatever the overlap policy: each is a tick's job.
	CatchUpAll
)

// Bounds and defaults of CatchUpAll.
const (
	CatchUpWindowDefault = 24 * time.Hour
	CatchUpWindowLimit   = 7 * 24 * time.Hour
	CatchUpMaxDefault    = 100
	CatchUpMaxLimit      = 10_000
)

// String returns "one", "none", "latest" or "all" (the stored and JSON
// names).
func (c CatchUp) String() string {
	switch c {
	case CatchUpNone:
		return "none"
	case CatchUpLatest:
		return "latest"
	case CatchUpAll:
		return "all"
	}
	return "one"
}

// Valid reports whether c is one of the CatchUp constants.
func (c CatchUp) Valid() bool { return c <= CatchUpAll }

// MarshalText implements encoding.TextMarshaler.
func (c CatchUp) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *CatchUp) UnmarshalText(b []byte) error {
	switch string(b) {
	case "one":
		*c = CatchUpOne
	case "none":
		*c = CatchUpNone
	case "latest":
		*c = CatchUpLatest
	case "all":
		*c = CatchUpAll
	default:
		return fmt.Errorf("catch_up %q: want one, none, latest or all", b)
	}
	return nil
}

// JitterMode says how a schedule's jitter delays the job of each tick.
type JitterMode uint8

const (
	// JitterRandom (the default): a new random delay at each tick.
	JitterRandom JitterMode = iota
	// JitterStable: the same fraction of the bound at every tick, from a
	// hash of the schedule's name (systemd's FixedRandomDelay): schedules
	// spread out, each keeps its own rhythm.
	JitterStable
)

// MaxJitter bounds a schedule's Jitter.
const MaxJitter = 24 * time.Hour

// String returns "random" or "stable".
func (m JitterMode) String() string {
	if m == JitterStable {
		return "stable"
	}
	return "random"
}

// Valid reports whether m is one of the JitterMode constants.
func (m JitterMode) Valid() bool { return m <= JitterStable }

// MarshalText implements encoding.TextMarshaler.
func (m JitterMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *JitterMode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "random":
		*m = JitterRandom
	case "stable":
		*m = JitterStable
	default:
		return fmt.Errorf("jitter_mode %q: want random or stable", b)
	}
	return nil
}

// JitterDelay returns how long after its tick the job of a tick of s may
// first run, its period being the time to the following tick: 0 without
// Jitter; else within [0, min(Jitter, period)), so that a job never runs
// past the next tick. JitterRandom draws it with randN (rand.Int64N: a
// number in [0, n)); JitterStable takes the same fraction of the bound at
// every tick, from a hash of the name (FNV-1a, mixed by MurmurHash3's
// finaliser): changing it would move every stable schedule's delay.
func (s *Schedule) JitterDelay(period time.Duration, randN func(n int64) int64) time.Duration {
	bound := min(s.Jitter, period)
	if bound <= 0 {
		return 0
	}
	if s.JitterMode == JitterStable {
		h := fnv.New64a()
		h.Write([]byte(s.Name))
		// FNV-1a's high bits barely change between names such as
		// "report-1" and "report-2": MurmurHash3's finaliser mixes them.
		x := h.Sum64()
		x ^= x >> 33
		x *= 0xff51afd7ed558ccd
		x ^= x >> 33
		x *= 0xc4ceb9fe1a85ec53
		x ^= x >> 33
		frac := float64(x>>11) / (1 << 53) // in [0, 1)
		return time.Duration(frac * float64(bound))
	}
	return time.Duration(randN(int64(bound)))
}

// Options are the options a schedule gives the jobs it fires, one value
// (its JSON fields are the schedule's own). A zero field is unset: the
// kind's, then the client's option applies when a tick fires (see
// hopper.EnqueueOptions); Priority may be PriorityZero, the priority 0
// given explicitly.
type Options struct {
	Queue       string          `json:"queue,omitempty"`
	Priority    int             `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Timeout     time.Duration   `json:"timeout,omitempty"`
	Retry       *backoff.Policy `json:"retry,omitempty"`
	// Meta and Tags are given to every job the schedule fires.
	Meta map[string]string `json:"meta,omitempty"`
	Tags []string          `json:"tags,omitempty"`
}

// Schedule is a recurring schedule: a rule that says when to fire and a
// template of the job each firing enqueues. Each firing is an ordinary job,
// keyed by (schedule name, fire time) so that a tick is never enqueued twice.
type Schedule struct {
	Name string `json:"name"`
	// Spec is a cron expression, a macro such as "@daily", or "@every 5m"
	// (see package schedule). With FixedDelay it is a duration: the next run
	// is counted from the previous job's completion.
	Spec       string  `json:"spec"`
	TimeZone   string  `json:"time_zone,omitempty"` // IANA name; empty means UTC
	FixedDelay bool    `json:"fixed_delay,omitempty"`
	Overlap    Overlap `json:"overlap"`
	Paused     bool    `json:"paused,omitempty"`
	// CatchUp is the policy for missed ticks; with CatchUpAll,
	// CatchUpWindow and CatchUpMax bound the runs (zero: the defaults,
	// CatchUpWindowDefault and CatchUpMaxDefault).
	CatchUp       CatchUp       `json:"catch_up"`
	CatchUpWindow time.Duration `json:"catch_up_window,omitempty"`
	CatchUpMax    int           `json:"catch_up_max,omitempty"`
	// Jitter delays the job of each tick by up to this much (JitterDelay),
	// by JitterMode; zero: none.
	Jitter     time.Duration `json:"jitter,omitempty"`
	JitterMode JitterMode    `json:"jitter_mode,omitempty"`
	// Monitor, if set, is what the schedule's monitor watches.
	Monitor *Monitor `json:"monitor,omitempty"`
	// OutputRetention says how many of its runs' outputs (Output) are
	// kept, and for how long; zero: the defaults (the newest
	// OutputKeepSucceeded successful attempts' and OutputKeepFailed
	// others').
	OutputRetention OutputRetention `json:"output_retention,omitzero"`

	// Template for the jobs it fires: their kind and args, and their
	// options, whose zero fields inherit from the kind's and the client's
	// options when a tick fires.
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args,omitempty"`
	Options

	// NextRunAt is the next tick; zero for a fixed-delay schedule whose
	// last job has not finished yet.
	NextRunAt  time.Time `json:"next_run_at,omitzero"`
	LastFireAt time.Time `json:"last_fire_at,omitzero"`
	LastJobID  ID        `json:"last_job_id,omitempty"`
	// SkippedTicks counts the ticks skipped since the schedule last fired
	// (the previous job was still waiting for a worker or running),
	// LastSkipAt the latest of them.
	SkippedTicks int       `json:"skipped_ticks,omitempty"`
	LastSkipAt   time.Time `json:"last_skip_at,omitzero"`
	// Buffered are the runs an OverlapBufferOne or OverlapBufferAll
	// schedule keeps waiting for its previous job to finish, oldest
	// first, each its tick (a zero time: a run now, RunSchedule). The
	// scheduler fires the first when the previous job has finished.
	Buffered  []time.Time `json:"buffered,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// Clone returns a deep copy of s.
func (s *Schedule) Clone() *Schedule {
	c := *s
	c.Args = cloneBytes(s.Args)
	c.Retry = s.Retry.Clone()
	c.Meta = cloneMeta(s.Meta)
	c.Tags = slices.Clone(s.Tags)
	c.Buffered = slices.Clone(s.Buffered)
	c.Monitor = s.Monitor.Clone()
	return &c
}

// Rule returns the rule that says when s fires. Fixed-rate intervals
// ("@every D") are anchored at the schedule's creation, so a schedule made
// at 10:00:07 with "@every 1m" fires at 10:01:07, 10:02:07, … whatever
// else happens. For a fixed-delay schedule, Rule returns nil and the
// delay: its next run is counted from the completion of the previous one.
// A bad spec or zone is a *FieldError on spec or time_zone.
func (s *Schedule) Rule() (schedule.Rule, time.Duration, error) {
	loc := time.UTC
	if s.TimeZone != "" {
		l, err := time.LoadLocation(s.TimeZone)
		if err != nil {
			return nil, 0, Invalid("time_zone", "unknown time zone %q", s.TimeZone)
		}
		loc = l
	}
	spec := strings.TrimSpace(s.Spec)
	if s.FixedDelay {
		d, err := time.ParseDuration(strings.TrimPrefix(spec, "@every "))
		if err == nil {
			err = schedule.CheckInterval(d)
		}
		if err != nil {
			return nil, 0, Invalid("spec", "fixed delay %q: want a duration of at least %s, such as 30s or 5m", s.Spec, schedule.MinInterval)
		}
		return nil, d, nil
	}
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, 0, Invalid("spec", "interval %q: %v", rest, err)
		}
		r, err := schedule.Every(d, s.CreatedAt)
		if err != nil {
			return nil, 0, Invalid("spec", "%v", err)
		}
		return r, 0, nil
	}
	r, err := schedule.Parse(spec, loc)
	if err != nil {
		return nil, 0, Invalid("spec", "%v", err)
	}
	return r, 0, nil
}

// FirstRun returns the first fire time of s, a new schedule, created at
// now (or resumed at now: the next tick after it).
func (s *Schedule) FirstRun(now time.Time) (time.Time, error) {
	r, delay, err := s.Rule()
	if err != nil {
		return time.Time{}, err
	}
	if r == nil {
		return now.Add(delay), nil
	}
	next := r.Next(now)
	if next.IsZero() {
		return time.Time{}, Invalid("spec", "%q never fires", s.Spec)
	}
	return next, nil
}

// MaxNextRuns bounds the n of Schedule.NextRuns: 1,000 fire times are
// years of an hourly schedule, and computed in about a millisecond.
const MaxNextRuns = 1000

// Location returns the zone s's times are shown in: a cron schedule's
// TimeZone, else UTC (an unknown zone, which AddSchedule refuses, is UTC).
func (s *Schedule) Location() *time.Location {
	if s.TimeZone != "" && !s.FixedDelay {
		if l, err := time.LoadLocation(s.TimeZone); err == nil {
			return l
		}
	}
	return time.UTC
}

// NextRuns returns the next n fire times of s as of now, in its zone
// (Location), computed by its rule (package schedule, across DST) as the
// scheduler computes them: an active schedule's from its stored next tick
// (which may be overdue while no server fires schedules); a paused one's
// the ticks it would fire if resumed at now (resuming never replays missed
// ticks). A fixed-delay schedule has at most one: its next run, or if
// paused now plus the delay, and none while it waits for its job to finish
// (each run counts from the previous one's end). Fewer than n come back
// when the rule stops (an expression that never fires again). An n outside
// 1 to MaxNextRuns is a *FieldError on "n"; a bad spec or zone one on
// spec or time_zone.
func (s *Schedule) NextRuns(now time.Time, n int) ([]time.Time, error) {
	if n < 1 || n > MaxNextRuns {
		return nil, Invalid("n", "must be between 1 and %d, got %d", MaxNextRuns, n)
	}
	rule, delay, err := s.Rule()
	if err != nil {
		return nil, err
	}
	loc := s.Location()
	if rule == nil { // fixed delay
		switch {
		case s.Paused:
			return []time.Time{now.Add(delay).In(loc)}, nil
		case s.NextRunAt.IsZero():
			return []time.Time{}, nil
		}
		return []time.Time{s.NextRunAt.In(loc)}, nil
	}
	t := s.NextRunAt
	if s.Paused || t.IsZero() {
		t = rule.Next(now)
	}
	out := make([]time.Time, 0, n)
	for len(out) < n && !t.IsZero() {
		out = append(out, t.In(loc))
		t = rule.Next(t)
	}
	return out, nil
}

// NewJob returns the job that the tick at fireTime enqueues, before its
// options are resolved and it is validated.
func (s *Schedule) NewJob(fireTime time.Time) *Job {
	return &Job{
		Kind:        s.Kind,
		Args:        cloneBytes(s.Args),
		Queue:       s.Queue,
		Priority:    s.Priority,
		MaxAttempts: s.MaxAttempts,
		Timeout:     s.Timeout,
		Retry:       s.Retry.Clone(),
		Meta:        cloneMeta(s.Meta),
		Tags:        slices.Clone(s.Tags),
		Schedule:    s.Name,
		FireTime:    fireTime,
	}
}
