package hopper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Bulk actions: CancelMatching, RetryMatching and DeleteMatching act on
// every job matching a filter, however many, in batches of BulkBatch jobs,
// each batch one transaction of the store (store.Store's CancelMatching,
// RetryMatching, DeleteMatching). Workers keep claiming and finishing
// between the batches; a process that dies half-way leaves the batches it
// committed done and the other jobs untouched, and calling again with the
// same UpTo finishes the action.

// BulkBatch is the number of jobs a bulk action changes per batch (per
// transaction).
const BulkBatch = store.DefaultMatchLimit

// BulkOptions select the jobs of a bulk action and report its progress.
// Of the jobs matching States, Queue and Kind, each action takes those it
// applies to: CancelMatching the waiting and running ones, RetryMatching
// the dead ones, DeleteMatching the finished ones.
type BulkOptions struct {
	// States, Queue and Kind keep the jobs in one of the States, of the
	// Queue and of the Kind (zero fields: any).
	States []State
	Queue  string
	Kind   string
	// All acts on every job the action applies to: an empty filter never
	// means all. It excludes States, Queue and Kind.
	All bool
	// ExceptKinds leaves the jobs of these kinds alone, whatever the
	// filter or All (at most 16 kinds). Total still counts them. The API
	// and the dashboard pass the kinds whose jobs run commands (exec,
	// notifications) when a token without the exec scope retries every
	// dead job.
	ExceptKinds []string
	// UpTo bounds the selection to jobs with an ID up to it (default: the
	// newest job the action applies to when the call starts). Jobs enqueued
	// later are left alone, so the action ends however fast jobs arrive.
	UpTo ID
	// Progress, if set, is called after each batch with the totals so
	// far, on the calling goroutine: the next batch waits for it.
	Progress func(BulkResult)
}

// BulkResult is what a bulk action did, so far or in all.
type BulkResult struct {
	// Total is how many jobs of the selection the action applied to when
	// it started (an estimate if more than 1,000 such jobs were enqueued
	// after UpTo): a denominator for progress, not a promise, since jobs
	// that finish while the action runs are not acted on.
	Total int
	// Done counts the jobs changed: cancelled (or, running, asked to
	// stop), retried or deleted.
	Done int
	// Requested counts, of Done, the running jobs asked to stop
	// (CancelMatching): they end cancelled unless they succeed first.
	Requested int
	// Skipped counts the jobs of the selection left as they were: dead
	// jobs whose unique key another unfinished job holds (RetryMatching),
	// or jobs that finished while their batch ran.
	Skipped int
	// UpTo is the highest job ID of the selection: BulkOptions.UpTo, or
	// the one found when the action started.
	UpTo ID
}

// CancelMatching cancels every waiting or running job that o selects, as
// Cancel does each one: a waiting job is cancelled at once; a running job
// is asked to stop and ends cancelled unless its handler succeeds first.
// It reports each transition as Cancel does (EventCancelled,
// EventCancelRequested). If ctx ends or the store fails, it returns what
// it did with the error: the batches done stay done, and the call may be
// made again with the same UpTo for the rest. Invalid options are a
// *FieldError, changing nothing.
func (c *Client) CancelMatching(ctx context.Context, o BulkOptions) (BulkResult, error) {
	return c.bulk(ctx, "cancel", o, store.CancelStates, &c.stops, c.store.CancelMatching, func(r store.MatchResult, at time.Time) {
		for _, id := range r.Running {
			c.engine.CancelRunning(id)
		}
		for _, j := range r.Jobs {
			t := job.EventCancelled
			if j.State == StateRunning {
				t = job.EventCancelRequested
			}
			c.transition(Event{Type: t, Job: j, At: at})
		}
	})
}

// RetryMatching moves every dead job that o selects back to waiting, as
// RetryDead does each one (attempts reset, history kept, EventRetried),
// except a dead job whose unique key another unfinished job holds: it
// stays dead and is counted as Skipped. Errors are as CancelMatching's.
func (c *Client) RetryMatching(ctx context.Context, o BulkOptions) (BulkResult, error) {
	return c.bulk(ctx, "retry", o, store.RetryStates, &c.starts, c.store.RetryMatching, func(r store.MatchResult, at time.Time) {
		if r.Changed > 0 {
			c.notify()
		}
		for _, j := range r.Jobs {
			c.transition(Event{Type: job.EventRetried, Job: j, At: at})
		}
	})
}

// DeleteMatching deletes, for good, every finished job (completed,
// cancelled, dead) that o selects, as Delete does. Errors are as
// CancelMatching's.
func (c *Client) DeleteMatching(ctx context.Context, o BulkOptions) (BulkResult, error) {
	return c.bulk(ctx, "delete", o, store.DeleteStates, nil, c.store.DeleteMatching, func(store.MatchResult, time.Time) {})
}

// validate returns a *FieldError unless o is a selection.
func (o BulkOptions) validate() error {
	filtered := len(o.States) > 0 || o.Queue != "" || o.Kind != ""
	switch {
	case !filtered && !o.All:
		return &FieldError{Field: "all", Reason: "give states, a queue or a kind, or All to act on every job"}
	case filtered && o.All:
		return &FieldError{Field: "all", Reason: "All excludes states, queue and kind"}
	case o.UpTo < 0:
		return &FieldError{Field: "up_to", Reason: fmt.Sprintf("must not be negative, got %d", o.UpTo)}
	case len(o.ExceptKinds) > store.MaxExceptKinds:
		return &FieldError{Field: "except_kinds", Reason: fmt.Sprintf("%d kinds, more than the limit of %d", len(o.ExceptKinds), store.MaxExceptKinds)}
	}
	for _, st := range o.States {
		if !slices.Contains(job.States, st) {
			return &FieldError{Field: "states", Reason: fmt.Sprintf("unknown state %d", uint8(st))}
		}
	}
	for _, k := range o.ExceptKinds {
		if err := job.CheckName("except_kinds", k); err != nil {
			return err
		}
	}
	return nil
}

// bulk runs a bulk action: run, the store's operation for it, batch after
// batch over the jobs of o in the states of applies, and report, the
// client's side of each batch (events, wake-ups), holding a ticket of f
// (if not nil) while a batch whose events it reports runs (fence).
func (c *Client) bulk(ctx context.Context, name string, o BulkOptions, applies []State, f *fence,
	run func(context.Context, store.MatchParams) (store.MatchResult, error), report func(store.MatchResult, time.Time)) (BulkResult, error) {
	if c.closed() {
		return BulkResult{}, ErrClientStopped
	}
	if err := o.validate(); err != nil {
		return BulkResult{}, err
	}
	p := store.MatchParams{States: o.States, Queue: o.Queue, Kind: o.Kind, ExceptKinds: o.ExceptKinds, UpTo: o.UpTo}
	states := p.Candidates(applies)
	if len(states) == 0 {
		return BulkResult{}, nil
	}
	res := BulkResult{UpTo: o.UpTo}
	lp := store.ListParams{States: states, Queue: o.Queue, Kind: o.Kind, Limit: 1}
	// The selection's ends: its newest job (unless given) and its oldest,
	// so that the batches start there rather than at ID 1.
	if p.UpTo == 0 {
		lp.Desc = true
		newest, err := c.store.List(ctx, lp)
		if err != nil || len(newest) == 0 {
			return res, wrap(name, err)
		}
		p.UpTo, res.UpTo = newest[0].ID, newest[0].ID
		lp.Desc = false
	}
	oldest, err := c.store.List(ctx, lp)
	if err != nil || len(oldest) == 0 || oldest[0].ID > p.UpTo {
		return res, wrap(name, err)
	}
	p.AfterID = oldest[0].ID - 1
	if res.Total, err = c.total(ctx, lp, p.UpTo); err != nil {
		return res, wrap(name, err)
	}
	for {
		if err := context.Cause(ctx); err != nil {
			return res, wrap(name, err)
		}
		if c.closed() {
			return res, wrap(name, ErrClientStopped)
		}
		p.Now, p.ReturnJobs = c.now(), c.reported()
		bf := f
		if !c.observing() {
			bf = nil // no engine report to keep in order
		}
		r, err := batch(ctx, bf, p, run, report)
		if err != nil {
			return res, wrap(name, err)
		}
		res.Done, res.Skipped, res.Requested = res.Done+r.Changed, res.Skipped+r.Skipped, res.Requested+len(r.Running)
		if o.Progress != nil {
			o.Progress(res)
		}
		if r.Next == 0 {
			return res, nil
		}
		p.AfterID = r.Next
	}
}

// batch runs one batch of a bulk action and reports it, holding a ticket
// of f from before the store call until its events are reported when
// there are events to report.
func batch(ctx context.Context, f *fence, p store.MatchParams,
	run func(context.Context, store.MatchParams) (store.MatchResult, error), report func(store.MatchResult, time.Time)) (store.MatchResult, error) {
	if f != nil && p.ReturnJobs {
		defer f.leave(f.enter())
	}
	r, err := run(ctx, p)
	if err == nil {
		report(r, p.Now)
	}
	return r, err
}

// totalPeek bounds the jobs newer than a selection's UpTo that total
// reads to take them out of the count.
const totalPeek = 1000

// total counts the jobs of lp with an ID up to upto: all of lp (a count
// the stores keep cheap), less those above upto, read up to totalPeek of
// them (beyond, the total is an estimate).
func (c *Client) total(ctx context.Context, lp store.ListParams, upto ID) (int, error) {
	n, err := c.store.Count(ctx, lp)
	if err != nil {
		return 0, err
	}
	lp.AfterID, lp.Desc, lp.Limit = upto, false, totalPeek
	newer, err := c.store.List(ctx, lp)
	if err != nil {
		return 0, err
	}
	return max(n-len(newer), 0), nil
}

// wrap adds the action's name to err (nil stays nil); a *FieldError is
// returned as it is.
func wrap(action string, err error) error {
	if err == nil {
		return nil
	}
	if fe := (*FieldError)(nil); errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("%s jobs: %w", action, err)
}
