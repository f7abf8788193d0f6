// Package storetest is the conformance suite every store.Store passes, in the
// manner of testing/fstest.TestFS: a backend's test calls Run (or
// RunWithOptions) with a factory of fresh, empty stores, and the suite checks
// every rule of docs/store-contract.md as a named subtest.
//
// The suite never sleeps and never reads the clock: every operation gets an
// explicit Now derived from a fixed instant, at millisecond offsets (durable
// stores keep at least microseconds).
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Options tune the suite for a backend.
type Options struct {
	// Closures reports whether the store keeps job.Func (only the memory
	// store). When false the suite checks that Enqueue of a job with Func
	// fails with job.ErrNotDurable and stores nothing.
	Closures bool
}

// Run runs the conformance suite against stores made by newStore. Each
// subtest gets a fresh, empty store from newStore(t) (the factory registers
// its own cleanup with t.Cleanup). Subtests call t.Parallel.
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	t.Helper()
	RunWithOptions(t, Options{}, newStore)
}

// RunWithOptions is Run with options for the backend.
func RunWithOptions(t *testing.T, opts Options, newStore func(t *testing.T) store.Store) {
	t.Helper()
	seen := make(map[string]bool)
	for _, group := range [][]testCase{
		enqueueCases(), claimCases(), finishCases(), uniqueCases(), debounceCases(),
		cancelCases(), leaseCases(), dlqCases(), matchCases(), scheduleCases(), bufferCases(),
		listCases(), labelCases(), concurrencyCases(), queueCases(), concurrencyLimitCases(), keyCases(), keylessCases(), throttleCases(), keyThrottleCases(), keyDropCases(), keyedRateDropCases(),
		closeCases(), oracleCases(), guardCases(),
		boundCases(), leaderCases(), serverCases(), monitorCases(), deathCases(), outputCases(), checkCases(),
	} {
		for _, c := range group {
			if seen[c.name] {
				panic("storetest: duplicate case " + c.name)
			}
			seen[c.name] = true
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				s := newStore(t)
				if s == nil {
					t.Fatal("newStore returned nil")
				}
				c.run(t, &env{t: t, s: s, ctx: t.Context(), opts: opts})
			})
		}
	}
}

// testCase is one named subtest.
type testCase struct {
	name string
	run  func(t *testing.T, e *env)
}

// env is what a case works with: its store and helpers that fail the test
// on unexpected errors.
type env struct {
	t    *testing.T
	s    store.Store
	ctx  context.Context
	opts Options
}

// t0 is the suite's fixed "now"; at(ms) is t0 plus ms milliseconds.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

const (
	maxAttempts = 25 // default max attempts given to Validate
	worker1     = "worker-1"
	worker2     = "worker-2"
	lease       = 30 * time.Second // default lease length of claims
)

// validated validates j as the client would before enqueueing it at now,
// after giving it the client's defaults: the default queue and maxAttempts.
func validated(t *testing.T, now time.Time, j *job.Job) *job.Job {
	t.Helper()
	if j.Queue == "" {
		j.Queue = job.DefaultQueue
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = maxAttempts
	}
	if err := j.Validate(now); err != nil {
		t.Fatalf("Validate(%+v): %v", j, err)
	}
	return j
}

// enqueue validates and enqueues jobs at now in one call.
func (e *env) enqueue(now time.Time, jobs ...*job.Job) []store.EnqueueResult {
	e.t.Helper()
	for _, j := range jobs {
		validated(e.t, now, j)
	}
	res, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: now, Jobs: jobs})
	if err != nil {
		e.t.Fatalf("Enqueue: %v", err)
	}
	if len(res) != len(jobs) {
		e.t.Fatalf("Enqueue: got %d results, want %d", len(res), len(jobs))
	}
	return res
}

// add enqueues one job at now and returns its new ID.
func (e *env) add(now time.Time, j *job.Job) job.ID {
	e.t.Helper()
	r := e.enqueue(now, j)[0]
	if r.Duplicate {
		e.t.Fatalf("Enqueue(%s): unexpectedly a duplicate of job %d", j.Kind, r.ID)
	}
	return r.ID
}

// addN enqueues n jobs of kind in queue at now, one per call, and returns
// their IDs.
func (e *env) addN(now time.Time, n int, kind, queue string) []job.ID {
	e.t.Helper()
	ids := make([]job.ID, n)
	for i := range ids {
		ids[i] = e.add(now, &job.Job{Kind: kind, Queue: queue})
	}
	return ids
}

// claim calls Claim, defaulting Worker to worker1 and LeaseUntil to
// Now+lease.
func (e *env) claim(p store.ClaimParams) store.ClaimResult {
	e.t.Helper()
	if p.Worker == "" {
		p.Worker = worker1
	}
	if p.LeaseUntil.IsZero() {
		p.LeaseUntil = p.Now.Add(lease)
	}
	res, err := e.s.Claim(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Claim: %v", err)
	}
	for _, j := range res.Jobs {
		if j == nil {
			e.t.Fatalf("Claim: returned a nil job")
		}
	}
	return res
}

// claimIDs claims up to limit jobs from any queue at now and returns their
// IDs, sorted.
func (e *env) claimIDs(now time.Time, limit int) []job.ID {
	e.t.Helper()
	return sortedIDs(e.claim(store.ClaimParams{Now: now, Limit: limit}).Jobs)
}

// claimExpect claims one job of queue at now as worker1 and fails unless it
// is id. Callers make sure id is the first ready job of its queue.
func (e *env) claimExpect(now time.Time, queue string, id job.ID) *job.Job {
	e.t.Helper()
	res := e.claim(store.ClaimParams{Now: now, Limit: 1, Queues: []string{queue}})
	if len(res.Jobs) != 1 || res.Jobs[0].ID != id {
		e.t.Fatalf("Claim(queue %q): got IDs %v, want [%d]", queue, idsOf(res.Jobs), id)
	}
	return res.Jobs[0]
}

// finish applies outcomes at now and reports which applied. It fails the
// test unless each applied outcome reports the state its job now has.
func (e *env) finish(now time.Time, outs ...store.Outcome) []bool {
	e.t.Helper()
	reached, err := e.s.Finish(e.ctx, store.FinishParams{Now: now, Outcomes: outs})
	if err != nil {
		e.t.Fatalf("Finish: %v", err)
	}
	if len(reached) != len(outs) {
		e.t.Fatalf("Finish: got %d reports, want %d", len(reached), len(outs))
	}
	ok := make([]bool, len(reached))
	for i, st := range reached {
		ok[i] = st != 0
		if ok[i] {
			if g := e.get(outs[i].ID); g.State != st {
				e.t.Errorf("Finish reported job %d %s, but it is %s", outs[i].ID, st, g.State)
			}
		}
	}
	return ok
}

// finishOne applies one outcome to the running job j at now and fails unless
// it applied. The record, the attempt and the claim are filled from j.
func (e *env) finishOne(now time.Time, j *job.Job, o store.Outcome) {
	e.t.Helper()
	o.ID, o.Attempt, o.Claim = j.ID, j.Attempt, j.Claims
	if reflect.DeepEqual(o.Record, job.Attempt{}) {
		o.Record = record(j, now, o.State.String(), o.Error)
	}
	if ok := e.finish(now, o); !ok[0] {
		e.t.Fatalf("Finish(job %d attempt %d -> %s): got false, want true", j.ID, j.Attempt, o.State)
	}
}

// record is the history entry of the attempt j is running, ended at now.
func record(j *job.Job, now time.Time, outcome, errMsg string) job.Attempt {
	return job.Attempt{
		Attempt:   j.Attempt,
		StartedAt: j.StartedAt,
		Duration:  now.Sub(j.StartedAt),
		Worker:    j.Worker,
		Outcome:   outcome,
		Error:     errMsg,
	}
}

// inState enqueues j at now and brings it to state st: scheduled (run-at an hour
// ahead unless set), available, running (claimed by worker1), retrying (run-at
// an hour ahead), completed, cancelled or dead, all finished at now. For
// running and later states, j must become the first ready job of its queue.
// It returns the stored job.
func (e *env) inState(now time.Time, j *job.Job, st job.State) *job.Job {
	e.t.Helper()
	if st == job.StateScheduled && j.RunAt.IsZero() {
		j.RunAt = now.Add(time.Hour)
	}
	id := e.add(now, j)
	switch st {
	case job.StateScheduled, job.StateAvailable:
	case job.StateCancelled:
		if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: now, ID: id}); err != nil {
			e.t.Fatalf("Cancel(%d): %v", id, err)
		}
	default:
		c := e.claimExpect(now, j.Queue, id)
		switch st {
		case job.StateRunning:
		case job.StateRetrying:
			e.finishOne(now, c, store.Outcome{State: st, RunAt: now.Add(time.Hour), Error: "boom"})
		case job.StateCompleted:
			e.finishOne(now, c, store.Outcome{State: st, Result: json.RawMessage(`{"n":1}`)})
		case job.StateDead:
			e.finishOne(now, c, store.Outcome{State: st, Error: "fatal"})
		default:
			e.t.Fatalf("inState: unsupported state %s", st)
		}
	}
	got := e.get(id)
	if got.State != st {
		e.t.Fatalf("inState(job %d): got state %s, want %s", id, got.State, st)
	}
	return got
}

// get returns the stored job id.
func (e *env) get(id job.ID) *job.Job {
	e.t.Helper()
	j, err := e.s.Get(e.ctx, id)
	if err != nil {
		e.t.Fatalf("Get(%d): %v", id, err)
	}
	if j == nil || j.ID != id {
		e.t.Fatalf("Get(%d): got %+v", id, j)
	}
	return j
}

// gone fails unless job id does not exist.
func (e *env) gone(id job.ID) {
	e.t.Helper()
	if j, err := e.s.Get(e.ctx, id); !errors.Is(err, job.ErrNotFound) {
		e.t.Errorf("Get(%d): got %v, %v, want job.ErrNotFound", id, j, err)
	}
}

// list calls List.
func (e *env) list(p store.ListParams) []*job.Job {
	e.t.Helper()
	js, err := e.s.List(e.ctx, p)
	if err != nil {
		e.t.Fatalf("List(%+v): %v", p, err)
	}
	return js
}

// all returns every job, by ascending ID, paging through List.
func (e *env) all() []*job.Job {
	e.t.Helper()
	var out []*job.Job
	var after job.ID
	for {
		page := e.list(store.ListParams{AfterID: after, Limit: 100})
		out = append(out, page...)
		if len(page) < 100 {
			return out
		}
		after = page[len(page)-1].ID
	}
}

// wantIDs fails unless the store holds exactly the jobs ids.
func (e *env) wantIDs(what string, ids ...job.ID) {
	e.t.Helper()
	got := idsOf(e.all())
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(got, want) {
		e.t.Errorf("%s: stored IDs got %v, want %v", what, got, want)
	}
}

// state returns the state of job id.
func (e *env) state(id job.ID) job.State {
	e.t.Helper()
	return e.get(id).State
}

// wantState fails unless job id is in state want.
func (e *env) wantState(id job.ID, want job.State) {
	e.t.Helper()
	if got := e.state(id); got != want {
		e.t.Errorf("job %d: got state %s, want %s", id, got, want)
	}
}

func idsOf(js []*job.Job) []job.ID {
	ids := make([]job.ID, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return ids
}

func sortedIDs(js []*job.Job) []job.ID {
	ids := idsOf(js)
	slices.Sort(ids)
	return ids
}

func intp(n int) *int    { return &n }
func boolp(b bool) *bool { return &b }

// unchanged fails unless the stored job equals before, as JSON.
func (e *env) unchanged(what string, before *job.Job) {
	e.t.Helper()
	after := e.get(before.ID)
	b, _ := json.Marshal(before)
	a, _ := json.Marshal(after)
	if !bytes.Equal(a, b) {
		e.t.Errorf("%s: job %d changed:\n got %s\nwant %s", what, before.ID, a, b)
	}
}

// crash claims job id (the first ready job of queue) at now with a lease
// until now+1s, then rescues it after the lease expired, at now+1001ms. It
// returns the rescued job, available again.
func (e *env) crash(now time.Time, queue string, id job.ID) *job.Job {
	e.t.Helper()
	res := e.claim(store.ClaimParams{Now: now, Limit: 1, Queues: []string{queue}, LeaseUntil: now.Add(time.Second)})
	if got := idsOf(res.Jobs); len(got) != 1 || got[0] != id {
		e.t.Fatalf("Claim(queue %q): got IDs %v, want [%d]", queue, got, id)
	}
	moved, err := e.s.Rescue(e.ctx, store.RescueParams{Now: now.Add(1001 * time.Millisecond)})
	if err != nil {
		e.t.Fatalf("Rescue: %v", err)
	}
	if got := idsOf(moved); len(got) != 1 || got[0] != id {
		e.t.Fatalf("Rescue: got IDs %v, want [%d]", got, id)
	}
	return e.get(id)
}
