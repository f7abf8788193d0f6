package memstore

import (
	"encoding/json"
	"github.com/hopperq/hopper/store"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// entry is the store's own record of a job, kept small because a store may
// hold millions of waiting jobs: the fields every job needs are inline (times
// as Unix nanoseconds), the rest hang off cold, which is allocated only when
// one of them is set (at the latest when the job first runs).
type entry struct {
	id       job.ID
	kind     string
	args     json.RawMessage
	fn       job.Func
	q        *queue
	priority int
	runAt    int64
	created  int64
	attempt  int32
	maxAtt   int32
	idx      int32 // position in q.ready or q.timed, -1 if in neither
	state    job.State
	cancel   bool // cancel requested while running
	c        *cold
}

type cold struct {
	timeout    time.Duration
	unique     string
	retry      *backoff.Policy
	result     json.RawMessage
	lastError  string
	attempts   []job.Attempt
	startedAt  int64
	finishedAt int64
	leaseUntil int64
	worker     string
	crashes    int
	schedule   string
	fireTime   int64
	prev, next *entry // links in Store.running or Store.finished
}

func (e *entry) cold() *cold {
	if e.c == nil {
		e.c = new(cold)
	}
	return e.c
}

func newEntry(j *job.Job, id job.ID, q *queue) *entry {
	e := &entry{
		id:       id,
		kind:     j.Kind,
		args:     j.Args,
		fn:       j.Func,
		q:        q,
		priority: j.Priority,
		runAt:    store.UnixNanos(j.RunAt),
		created:  store.UnixNanos(j.CreatedAt),
		maxAtt:   int32(j.MaxAttempts),
		idx:      -1,
		state:    j.State,
	}
	if j.Timeout != 0 || j.UniqueKey != "" || j.Retry != nil || j.Schedule != "" {
		c := e.cold()
		c.timeout = j.Timeout
		c.unique = j.UniqueKey
		c.retry = j.Retry
		c.schedule = j.Schedule
		c.fireTime = store.UnixNanos(j.FireTime)
	}
	return e
}

func (e *entry) uniqueKey() string {
	if e.c == nil {
		return ""
	}
	return e.c.unique
}

// job returns a copy of the entry as a job.Job.
func (e *entry) job() *job.Job {
	j := new(job.Job)
	e.fill(j)
	return j
}

// fill sets *j to a copy of the entry.
func (e *entry) fill(j *job.Job) {
	*j = job.Job{
		ID:              e.id,
		Kind:            e.kind,
		Args:            e.args,
		Func:            e.fn,
		Queue:           e.q.name,
		Priority:        e.priority,
		RunAt:           store.FromUnixNanos(e.runAt),
		MaxAttempts:     int(e.maxAtt),
		Attempt:         int(e.attempt),
		State:           e.state,
		CreatedAt:       store.FromUnixNanos(e.created),
		CancelRequested: e.cancel,
	}
	if c := e.c; c != nil {
		j.Timeout = c.timeout
		j.UniqueKey = c.unique
		if c.retry != nil {
			r := *c.retry
			j.Retry = &r
		}
		j.Result = c.result
		j.LastError = c.lastError
		if len(c.attempts) > 0 {
			j.Attempts = append([]job.Attempt(nil), c.attempts...)
		}
		j.StartedAt = store.FromUnixNanos(c.startedAt)
		j.FinishedAt = store.FromUnixNanos(c.finishedAt)
		j.LeaseUntil = store.FromUnixNanos(c.leaseUntil)
		j.Worker = c.worker
		j.Crashes = c.crashes
		j.Schedule = c.schedule
		j.FireTime = store.FromUnixNanos(c.fireTime)
	}
}
