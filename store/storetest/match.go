package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// The bulk actions (CancelMatching, RetryMatching, DeleteMatching) are
// checked against the transitions as oracle, batch by batch: a call
// changes exactly the jobs of its batch that the action applies to, as
// the single-job transition would, and leaves every other job as it was.

// matchOp is one of the bulk actions of a store.
type matchOp func(e *env) func(p store.MatchParams) (store.MatchResult, error)

var (
	cancelMatching matchOp = func(e *env) func(store.MatchParams) (store.MatchResult, error) {
		return func(p store.MatchParams) (store.MatchResult, error) { return e.s.CancelMatching(e.ctx, p) }
	}
	retryMatching matchOp = func(e *env) func(store.MatchParams) (store.MatchResult, error) {
		return func(p store.MatchParams) (store.MatchResult, error) { return e.s.RetryMatching(e.ctx, p) }
	}
	deleteMatching matchOp = func(e *env) func(store.MatchParams) (store.MatchResult, error) {
		return func(p store.MatchParams) (store.MatchResult, error) { return e.s.DeleteMatching(e.ctx, p) }
	}
)

// matchAll calls op from p.AfterID until the selection is exhausted,
// checking each call's bounds, and returns the calls' results.
func (e *env) matchAll(op matchOp, p store.MatchParams) []store.MatchResult {
	e.t.Helper()
	var out []store.MatchResult
	for range 10_000 {
		res, err := op(e)(p)
		if err != nil {
			e.t.Fatalf("bulk action %+v: %v", p, err)
		}
		if res.Changed+res.Skipped > p.Size() {
			e.t.Errorf("bulk action %+v: changed %d and skipped %d, more than the limit", p, res.Changed, res.Skipped)
		}
		if res.Next != 0 && (res.Next <= p.AfterID || res.Next > p.Last()) {
			e.t.Fatalf("bulk action %+v: next %d, want in (%d, %d]", p, res.Next, p.AfterID, p.Last())
		}
		out = append(out, res)
		if res.Next == 0 {
			return out
		}
		p.AfterID = res.Next
	}
	e.t.Fatalf("bulk action %+v: no end", p)
	return nil
}

// total sums the results' Changed and Skipped, and lists their Jobs and
// Running.
func total(rs []store.MatchResult) (changed, skipped int, jobs []*job.Job, running []job.ID) {
	for _, r := range rs {
		changed += r.Changed
		skipped += r.Skipped
		jobs = append(jobs, r.Jobs...)
		running = append(running, r.Running...)
	}
	return changed, skipped, jobs, running
}

// everyState makes, in each of the queues prefix+"a" and prefix+"b", a
// job in each state, of the kinds ka and kb alternately, each with a
// unique key of its own; it returns them by ID. The available jobs come
// last, so that inState claims the jobs it means to.
func (e *env) everyState(now time.Time, prefix string) []*job.Job {
	e.t.Helper()
	order := []job.State{job.StateRunning, job.StateRetrying, job.StateCompleted, job.StateCancelled, job.StateDead,
		job.StateScheduled, job.StateAvailable}
	var out []*job.Job
	for i, q := range []string{prefix + "a", prefix + "b"} {
		for k, st := range order {
			kind := []string{"ka", "kb"}[(i+k)%2]
			out = append(out, e.inState(now, &job.Job{Kind: kind, Queue: q, UniqueKey: fmt.Sprintf("%s-%d", q, k)}, st))
		}
	}
	return out
}

func matchCases() []testCase {
	return []testCase{
		{"MatchOracle", func(t *testing.T, e *env) {
			// Each action on every state, filtered by queue, kind and
			// state, bounded by UpTo; every job compared with the oracle.
			type tc struct {
				name    string
				op      matchOp
				applies []job.State
				filter  store.MatchParams
				apply   func(j *job.Job, now time.Time) error // nil: deleted
			}
			cancel := func(j *job.Job, now time.Time) error { return store.ApplyCancel(j, now) }
			retry := func(j *job.Job, now time.Time) error { return store.ApplyRetryDead(j, now) }
			for _, c := range []tc{
				{"cancel", cancelMatching, store.CancelStates, store.MatchParams{}, cancel},
				{"cancel queue", cancelMatching, store.CancelStates, store.MatchParams{Queue: "a"}, cancel},
				{"cancel kind and states", cancelMatching, store.CancelStates,
					store.MatchParams{Kind: "kb", States: []job.State{job.StateRunning, job.StateScheduled, job.StateCompleted}}, cancel},
				{"retry", retryMatching, store.RetryStates, store.MatchParams{}, retry},
				{"retry queue", retryMatching, store.RetryStates, store.MatchParams{Queue: "b", States: []job.State{job.StateDead}}, retry},
				{"retry except kinds", retryMatching, store.RetryStates, store.MatchParams{ExceptKinds: []string{"ka", "kz"}}, retry},
				{"cancel except kind", cancelMatching, store.CancelStates, store.MatchParams{Queue: "a", ExceptKinds: []string{"kb"}}, cancel},
				{"delete", deleteMatching, store.DeleteStates, store.MatchParams{}, nil},
				{"delete kind", deleteMatching, store.DeleteStates, store.MatchParams{Kind: "ka", States: []job.State{job.StateCancelled, job.StateDead}}, nil},
			} {
				t.Run(c.name, func(t *testing.T) {
					e := &env{t: t, s: e.s, ctx: e.ctx, opts: e.opts}
					prefix := c.name + "-"
					jobs := e.everyState(t0, prefix)
					// After UpTo; first in claim order, for inState.
					late := e.inState(t0, &job.Job{Kind: "ka", Queue: prefix + "a", Priority: -1}, c.applies[0])
					now := at(5000)
					p := c.filter
					if p.Queue != "" {
						p.Queue = prefix + p.Queue
					}
					p.Now, p.UpTo, p.Limit, p.ReturnJobs = now, jobs[len(jobs)-1].ID, 3, true
					p.AfterID = jobs[0].ID - 1
					want := make(map[job.ID]*job.Job) // nil: deleted
					var wantChanged []job.ID
					var wantRunning []job.ID
					for _, j := range jobs {
						in := slices.Contains(c.applies, j.State) && (len(p.States) == 0 || slices.Contains(p.States, j.State)) &&
							(p.Queue == "" || j.Queue == p.Queue) && (p.Kind == "" || j.Kind == p.Kind) &&
							!slices.Contains(p.ExceptKinds, j.Kind)
						switch {
						case !in:
							want[j.ID] = j
						case c.apply == nil:
							want[j.ID] = nil
							wantChanged = append(wantChanged, j.ID)
						default:
							w := j.Clone()
							if err := c.apply(w, now); err != nil {
								t.Fatalf("oracle for job %d: %v", j.ID, err)
							}
							want[j.ID] = w
							wantChanged = append(wantChanged, j.ID)
							if w.State == job.StateRunning {
								wantRunning = append(wantRunning, j.ID)
							}
						}
					}
					changed, skipped, got, running := total(e.matchAll(c.op, p))
					if changed != len(wantChanged) || skipped != 0 {
						t.Errorf("changed %d, skipped %d; want %d changed (%v), none skipped", changed, skipped, len(wantChanged), wantChanged)
					}
					wantIDList(t, "running jobs reported", running, wantRunning)
					if c.apply != nil {
						wantIDList(t, "jobs returned", idsOf(got), wantChanged)
						for _, g := range got {
							e.wantJob("returned", g, want[g.ID])
						}
					}
					for _, j := range jobs {
						if want[j.ID] == nil {
							e.gone(j.ID)
						} else {
							e.wantJob("stored", e.get(j.ID), want[j.ID])
						}
					}
					e.unchanged("job after UpTo", late)
				})
			}
		}},
		{"MatchBatches", func(t *testing.T, e *env) {
			// Five matching jobs among others, two per call; then a sparse
			// selection: a call reads at most MatchSpan×Limit IDs.
			var match []job.ID
			for i := range 12 {
				q := "other"
				if i%2 == 0 && len(match) < 5 {
					q = "bulk"
				}
				id := e.add(t0, &job.Job{Kind: "k", Queue: q, RunAt: at(60000)})
				if q == "bulk" {
					match = append(match, id)
				}
			}
			rs := e.matchAll(cancelMatching, store.MatchParams{Now: at(1), Queue: "bulk", UpTo: match[4] + 3, Limit: 2})
			if len(rs) != 3 || rs[0].Changed != 2 || rs[1].Changed != 2 || rs[2].Changed != 1 {
				t.Errorf("batches of 2 over 5 jobs: got %+v", rs)
			}
			if rs[0].Next != match[1] || rs[1].Next != match[3] {
				t.Errorf("next after the batches: %d and %d, want %d and %d", rs[0].Next, rs[1].Next, match[1], match[3])
			}
			for _, id := range match {
				e.wantState(id, job.StateCancelled)
			}
			if n := len(e.list(store.ListParams{Queue: "other", States: []job.State{job.StateScheduled}})); n != 7 {
				t.Errorf("jobs of another queue still scheduled: %d, want 7", n)
			}

			first := e.add(t0, &job.Job{Kind: "k", Queue: "sparse"})
			var lastID job.ID
			for range 2*store.MatchSpan + 5 {
				lastID = e.add(t0, &job.Job{Kind: "k", Queue: "dense"})
			}
			end := e.add(t0, &job.Job{Kind: "k", Queue: "sparse"})
			rs = e.matchAll(cancelMatching, store.MatchParams{Now: at(2), Queue: "sparse", AfterID: first - 1, UpTo: end, Limit: 1})
			if changed, _, _, _ := total(rs); changed != 2 || len(rs) < 3 {
				t.Errorf("sparse selection: %d changed in %d calls, want 2 in at least 3 (one every %d IDs)", changed, len(rs), store.MatchSpan)
			}
			e.wantState(first, job.StateCancelled)
			e.wantState(end, job.StateCancelled)
			e.wantState(lastID, job.StateAvailable)
		}},
		{"MatchRetryKeys", func(t *testing.T, e *env) {
			// A dead job whose key an unfinished job holds stays dead; of
			// two dead jobs of one key, the first moves.
			held := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "held"}, job.StateDead)
			holder := e.add(t0, &job.Job{Kind: "k", UniqueKey: "held", RunAt: at(60000)})
			first := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "shared"}, job.StateDead)
			second := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "shared"}, job.StateDead)
			free := e.inState(t0, &job.Job{Kind: "k"}, job.StateDead)
			changed, skipped, _, _ := total(e.matchAll(retryMatching, store.MatchParams{Now: at(1), UpTo: free.ID}))
			if changed != 2 || skipped != 2 {
				t.Errorf("retried %d, skipped %d; want 2 and 2", changed, skipped)
			}
			e.wantState(held.ID, job.StateDead)
			e.wantState(holder, job.StateScheduled)
			e.wantState(first.ID, job.StateAvailable)
			e.wantState(second.ID, job.StateDead)
			e.wantState(free.ID, job.StateAvailable)
		}},
		{"MatchNothingToDo", func(t *testing.T, e *env) {
			done := e.inState(t0, &job.Job{Kind: "k"}, job.StateCompleted)
			waiting := e.inState(t0, &job.Job{Kind: "k"}, job.StateAvailable)
			for name, op := range map[string]matchOp{"cancel": cancelMatching, "retry": retryMatching, "delete": deleteMatching} {
				for _, p := range []store.MatchParams{
					{Now: at(1), UpTo: waiting.ID, States: []job.State{job.StateCompleted, job.StateAvailable}, Queue: "none"},
					{Now: at(1), UpTo: waiting.ID, AfterID: waiting.ID},
				} {
					res, err := op(e)(p)
					if err != nil || res.Changed != 0 || res.Next != 0 {
						t.Errorf("%s %+v: got %+v, %v, want nothing done and no next batch", name, p, res, err)
					}
				}
			}
			if res, err := e.s.CancelMatching(e.ctx, store.MatchParams{Now: at(1), UpTo: waiting.ID, States: []job.State{job.StateCompleted}}); err != nil || res.Changed+res.Skipped != 0 || res.Next != 0 {
				t.Errorf("cancel of completed jobs: got %+v, %v, want nothing", res, err)
			}
			e.unchanged("completed job", done)
			e.unchanged("available job", waiting)
		}},
		{"MatchRefusesBadSelections", func(t *testing.T, e *env) {
			j := e.inState(t0, &job.Job{Kind: "k"}, job.StateAvailable)
			var fe *job.FieldError
			for _, c := range []struct {
				p     store.MatchParams
				field string
			}{
				{store.MatchParams{Now: at(1)}, "up_to"},
				{store.MatchParams{Now: at(1), UpTo: -1}, "up_to"},
				{store.MatchParams{Now: at(1), UpTo: j.ID, AfterID: -1}, "after_id"},
				{store.MatchParams{Now: at(1), UpTo: j.ID, Limit: store.MaxMatchLimit + 1}, "limit"},
				{store.MatchParams{Now: at(1), UpTo: j.ID, Limit: -1}, "limit"},
				{store.MatchParams{Now: at(1), UpTo: j.ID, States: []job.State{99}}, "states"},
			} {
				for name, op := range map[string]matchOp{"cancel": cancelMatching, "retry": retryMatching, "delete": deleteMatching} {
					if res, err := op(e)(c.p); !errors.As(err, &fe) || fe.Field != c.field || res.Changed != 0 {
						t.Errorf("%s %+v: got %+v, %v, want a *job.FieldError on %s", name, c.p, res, err, c.field)
					}
				}
			}
			e.unchanged("job", j)
		}},
		{"MatchCancelWhileClaiming", func(t *testing.T, e *env) {
			// Claims race a bulk cancel: every job ends cancelled, or
			// running with its cancellation requested, never missed.
			const n = 600
			var ids []job.ID
			for b := 0; b < n; b += 200 {
				batch := make([]*job.Job, 200)
				for i := range batch {
					batch[i] = &job.Job{Kind: "k"}
				}
				for _, r := range e.enqueue(t0, batch...) {
					ids = append(ids, r.ID)
				}
			}
			var wg sync.WaitGroup
			stop := make(chan struct{})
			for g := range 4 {
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if _, err := e.s.Claim(e.ctx, store.ClaimParams{Now: at(1), Limit: 1 + g, Worker: "w", LeaseUntil: at(60000)}); err != nil {
							t.Errorf("Claim: %v", err)
							return
						}
					}
				})
			}
			changed, _, _, running := total(e.matchAll(cancelMatching, store.MatchParams{Now: at(2), UpTo: ids[n-1], Limit: 50}))
			close(stop)
			wg.Wait()
			if changed != n {
				t.Errorf("changed %d jobs, want %d", changed, n)
			}
			for _, j := range e.all() {
				switch {
				case j.State == job.StateCancelled:
				case j.State == job.StateRunning && j.CancelRequested:
					if !slices.Contains(running, j.ID) {
						t.Errorf("job %d: running with a cancel requested, not reported running", j.ID)
					}
				default:
					t.Errorf("job %d: %s (cancel requested %v), want cancelled or running with a cancel requested", j.ID, j.State, j.CancelRequested)
				}
			}
		}},
	}
}
