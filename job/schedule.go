package job

import (
	"encoding/json"
	"time"

	"github.com/hopperq/hopper/backoff"
)

// Overlap says what a recurring schedule does when a tick comes while the job
// of its previous tick has not finished.
type Overlap uint8

const (
	// OverlapSkip skips the tick (the default): at most one job of the
	// schedule is waiting or running at a time.
	OverlapSkip Overlap = iota
	// OverlapAllow fires anyway.
	OverlapAllow
)

// String returns "skip" or "allow".
func (o Overlap) String() string {
	if o == OverlapAllow {
		return "allow"
	}
	return "skip"
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

	// Template for the jobs it fires.
	Kind        string          `json:"kind"`
	Args        json.RawMessage `json:"args,omitempty"`
	Queue       string          `json:"queue,omitempty"`
	Priority    int             `json:"priority,omitempty"`
	MaxAttempts int             `json:"max_attempts,omitempty"`
	Timeout     time.Duration   `json:"timeout,omitempty"`
	Retry       *backoff.Policy `json:"retry,omitempty"`

	// NextRunAt is the next tick; zero for a fixed-delay schedule whose
	// last job has not finished yet.
	NextRunAt  time.Time `json:"next_run_at,omitzero"`
	LastFireAt time.Time `json:"last_fire_at,omitzero"`
	LastJobID  ID        `json:"last_job_id,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
}

// Clone returns a deep copy of s.
func (s *Schedule) Clone() *Schedule {
	c := *s
	c.Args = append(json.RawMessage(nil), s.Args...)
	if s.Retry != nil {
		r := *s.Retry
		c.Retry = &r
	}
	return &c
}

// NewJob returns the job that the tick at fireTime enqueues.
func (s *Schedule) NewJob(fireTime time.Time) *Job {
	return &Job{
		Kind:        s.Kind,
		Args:        s.Args,
		Queue:       s.Queue,
		Priority:    s.Priority,
		MaxAttempts: s.MaxAttempts,
		Timeout:     s.Timeout,
		Retry:       s.Retry,
		Schedule:    s.Name,
		FireTime:    fireTime,
	}
}
