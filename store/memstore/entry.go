package memstore

import (
	"encoding/json"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// entry is the store's own record of a job, kept small because a store may
// hold millions of waiting jobs: the fields every job needs are inline (times
// as Unix nanoseconds; queue and kind through its lane), the rest hang off
// cold, which is allocated only when one of them is set (at the latest when
// the job first runs).
type entry struct {
	id       job.ID
	args     json.RawMessage // the store's own copy
	fn       job.Func
	l        *lane
	priority int
	runAt    int64
	created  int64
	attempt  int32
	maxAtt   int32
	idx      int32 // position in l.ready or l.timed, -1 if in neither
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

// newEntry makes the entry of a validated job, copying everything mutable.
func newEntry(j *job.Job, id job.ID, l *lane) *entry {
	e := &entry{
		id:       id,
		args:     clone(j.Args),
		fn:       j.Func,
		l:        l,
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
		c.retry = j.Retry.Clone()
		c.schedule = j.Schedule
		c.fireTime = store.UnixNanos(j.FireTime)
	}
	return e
}

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
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

// fill sets *j to a copy of the entry that shares nothing mutable with it.
func (e *entry) fill(j *job.Job) {
	e.view(j)
	j.Args = clone(j.Args)
	j.Result = clone(j.Result)
	if j.Attempts != nil {
		j.Attempts = append([]job.Attempt(nil), j.Attempts...)
		for i := range j.Attempts {
			j.Attempts[i].Result = clone(j.Attempts[i].Result)
		}
	}
	j.Retry = j.Retry.Clone()
}

// view sets *j to the entry's fields, sharing its slices: for applying a
// transition (store.Apply…) and writing it back with Store.update.
func (e *entry) view(j *job.Job) {
	*j = job.Job{
		ID:              e.id,
		Kind:            e.l.kind,
		Args:            e.args,
		Func:            e.fn,
		Queue:           e.l.queue,
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
		j.Retry = c.retry
		j.Result = c.result
		j.LastError = c.lastError
		j.Attempts = c.attempts
		j.StartedAt = store.FromUnixNanos(c.startedAt)
		j.FinishedAt = store.FromUnixNanos(c.finishedAt)
		j.LeaseUntil = store.FromUnixNanos(c.leaseUntil)
		j.Worker = c.worker
		j.Crashes = c.crashes
		j.Schedule = c.schedule
		j.FireTime = store.FromUnixNanos(c.fireTime)
	}
}
