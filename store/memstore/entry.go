package memstore

import (
	"encoding/json"
	"maps"
	"slices"
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
	idx      int32 // position in l.ready or l.timed (see jobHeap), -1 if in neither
	state    job.State
	cancel   bool // cancel requested while running
	kill     bool // with cancel: terminate requested
	keySlot  bool // the running attempt holds a slot of its key (keys.go)
	c        *cold
}

// cold holds what a job needs only once it has run, or when an option is
// set. A plain success — the last attempt completed the job, with no error
// and no result kept with it — is not stored in attempts but implied by the
// fields beside it (lastImplied), so a completed job's record costs one
// allocation.
type cold struct {
	opt         *options
	result      json.RawMessage
	lastError   string
	attempts    []job.Attempt // the history, but for an implied last attempt
	startedAt   int64
	finishedAt  int64
	leaseUntil  int64
	worker      string
	claims      int64 // job.Job.Claims: only a job that ran has any
	crashes     int32
	lastImplied bool   // the last attempt is {attempt, startedAt, lastDur, lastWorker, completed}
	lastDur     int64  // its duration; while running, the last heart-beat (beat)
	lastWorker  string // its worker
	prev, next  *entry // links in Store.running or Store.finished
}

// options are the enqueue-time settings most jobs leave unset.
type options struct {
	timeout  time.Duration
	unique   string
	retry    *backoff.Policy
	schedule string
	fireTime int64
	meta     map[string]string
	tags     []string
	key      string // the flow-control key
}

func (e *entry) cold() *cold {
	if e.c == nil {
		e.c = new(cold)
	}
	return e.c
}

// opt returns the entry's options; the zero options if none is set.
func (e *entry) opt() *options {
	if e.c == nil || e.c.opt == nil {
		return &noOptions
	}
	return e.c.opt
}

var noOptions options

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
	if j.Timeout != 0 || j.UniqueKey != "" || j.Retry != nil || j.Schedule != "" || len(j.Meta) > 0 || len(j.Tags) > 0 || j.Key != "" {
		e.cold().opt = &options{
			timeout:  j.Timeout,
			unique:   j.UniqueKey,
			retry:    j.Retry.Clone(),
			schedule: j.Schedule,
			fireTime: store.UnixNanos(j.FireTime),
			meta:     maps.Clone(j.Meta),
			tags:     slices.Clone(j.Tags),
			key:      j.Key,
		}
		if len(j.Meta) == 0 {
			e.c.opt.meta = nil
		}
		if len(j.Tags) == 0 {
			e.c.opt.tags = nil
		}
	}
	return e
}

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

func (e *entry) uniqueKey() string { return e.opt().unique }

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
	j.Meta = maps.Clone(j.Meta)
	j.Tags = slices.Clone(j.Tags)
}

// view sets *j to the entry's fields, sharing its slices: for applying a
// transition (store.Apply…) and writing it back with Store.update.
func (e *entry) view(j *job.Job) {
	*j = job.Job{
		ID:                 e.id,
		Kind:               e.l.kind,
		Args:               e.args,
		Func:               e.fn,
		Queue:              e.l.queue,
		Priority:           e.priority,
		RunAt:              store.FromUnixNanos(e.runAt),
		MaxAttempts:        int(e.maxAtt),
		Attempt:            int(e.attempt),
		State:              e.state,
		CreatedAt:          store.FromUnixNanos(e.created),
		CancelRequested:    e.cancel,
		TerminateRequested: e.kill,
	}
	if c := e.c; c != nil {
		if o := c.opt; o != nil {
			j.Timeout = o.timeout
			j.UniqueKey = o.unique
			j.Retry = o.retry
			j.Schedule = o.schedule
			j.FireTime = store.FromUnixNanos(o.fireTime)
			j.Meta = o.meta
			j.Tags = o.tags
			j.Key = o.key
		}
		j.Result = c.result
		j.LastError = c.lastError
		j.Attempts = c.attempts
		j.StartedAt = store.FromUnixNanos(c.startedAt)
		j.FinishedAt = store.FromUnixNanos(c.finishedAt)
		j.LeaseUntil = store.FromUnixNanos(c.leaseUntil)
		j.Worker = c.worker
		j.Claims = c.claims
		j.Crashes = int(c.crashes)
		if c.lastImplied {
			// A new array: the entry's own stays as it is.
			j.Attempts = append(j.Attempts[:len(j.Attempts):len(j.Attempts)], job.Attempt{
				Attempt: int(e.attempt), StartedAt: j.StartedAt, Duration: time.Duration(c.lastDur),
				Worker: c.lastWorker, Outcome: outcomeCompleted,
			})
		}
	}
}

// beat returns when the worker last renewed the lease of the running job
// (Unix nanoseconds, 0 if never), for store.ApplyRescue, and setBeat sets
// it. It is kept in lastDur, which only a completed job uses: a running
// job's last attempt is never implied, and a beat of an earlier attempt
// is older than the attempt's start, which ApplyRescue takes for none.
func (c *cold) beat() int64 { return c.lastDur }

func (c *cold) setBeat(ns int64) { c.lastDur = ns }

// keepAttempts stores the history of j, which a transition has just
// applied to a view of the entry, implying its last attempt if it is a
// plain success. scratch is the store's spare array the history may be in
// (Store.finishView); it is copied out of it if it must be kept.
func (c *cold) keepAttempts(j *job.Job, scratch *job.Attempt) {
	as := j.Attempts
	c.lastImplied = false
	if n := len(as); n > 0 && j.State == job.StateCompleted {
		a := &as[n-1]
		if a.Attempt == j.Attempt && a.StartedAt.Equal(j.StartedAt) && a.Outcome == outcomeCompleted &&
			a.Error == "" && a.Backoff == 0 && a.Result == nil {
			c.lastImplied, c.lastDur, c.lastWorker = true, int64(a.Duration), a.Worker
			as = as[:n-1]
		}
	}
	switch {
	case len(as) == 0:
		as = nil
	case &as[0] == scratch:
		as = slices.Clone(as)
	}
	c.attempts = as
}

// outcomeCompleted is the Outcome of an attempt that completed its job.
var outcomeCompleted = job.StateCompleted.String()
