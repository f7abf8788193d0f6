package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// debounced returns a job of kind "k" with args {"n":n}, debounced on key.
func debounced(key string, n int, d job.Debounce) *job.Job {
	return &job.Job{Kind: "k", UniqueKey: key, Debounce: d, Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}
}

// wantDebounced fails unless r reports a merge into holder, which is left
// in state st.
func wantDebounced(t *testing.T, what string, r store.EnqueueResult, holder job.ID, st job.State) {
	t.Helper()
	if !r.Debounced || r.Duplicate || r.ID != holder || r.State != st {
		t.Errorf("%s: got ID %d Debounced %v Duplicate %v state %s, want ID %d Debounced true state %s",
			what, r.ID, r.Debounced, r.Duplicate, r.State, holder, st)
	}
}

// wantArgsRunAt fails unless job id has args {"n":n}, run-at runAt and state st.
func (e *env) wantArgsRunAt(what string, id job.ID, n int, runAt time.Time, st job.State) {
	e.t.Helper()
	g := e.get(id)
	if want := fmt.Sprintf(`{"n":%d}`, n); !jsonEqual(g.Args, []byte(want)) || !g.RunAt.Equal(runAt) || g.State != st {
		e.t.Errorf("%s: job %d has args %s run-at %v state %s, want args %s run-at %v state %s",
			what, id, g.Args, g.RunAt, g.State, want, runAt, st)
	}
}

func debounceCases() []testCase {
	period := job.Debounce{Period: time.Second}
	return []testCase{
		{"DebounceMergesIntoWaitingJob", func(t *testing.T, e *env) {
			r := e.enqueue(t0, debounced("key", 1, period))[0]
			wantNew(t, "first enqueue", r)
			if r.Debounced || r.State != job.StateScheduled {
				t.Errorf("first enqueue: got Debounced %v state %s, want a new scheduled job", r.Debounced, r.State)
			}
			e.wantArgsRunAt("after the first enqueue", r.ID, 1, at(1000), job.StateScheduled)
			wantDebounced(t, "second enqueue", e.enqueue(at(400), debounced("key", 2, period))[0], r.ID, job.StateScheduled)
			e.wantArgsRunAt("after the second enqueue", r.ID, 2, at(1400), job.StateScheduled)
			e.wantIDs("after two enqueues of one key", r.ID)
			if g := e.get(r.ID); !g.CreatedAt.Equal(t0) || g.Attempt != 0 || g.UniqueKey != "key" {
				t.Errorf("merged job: created %v attempt %d key %q, want created %v attempt 0 key %q", g.CreatedAt, g.Attempt, g.UniqueKey, t0, "key")
			}
			if ids := e.claimIDs(at(1399), 10); len(ids) != 0 {
				t.Errorf("claim before the pushed run-at: got %v, want none", ids)
			}
			if ids := e.claimIDs(at(1400), 10); len(ids) != 1 || ids[0] != r.ID {
				t.Errorf("claim at the pushed run-at: got %v, want [%d]", ids, r.ID)
			}
		}},
		{"DebounceManyEnqueuesOneRunWithLastArgs", func(t *testing.T, e *env) {
			const n = 100
			var id job.ID
			for i := range n {
				r := e.enqueue(at(i*5), debounced("key", i, period))[0]
				if i == 0 {
					id = r.ID
				} else {
					wantDebounced(t, fmt.Sprintf("enqueue %d", i), r, id, job.StateScheduled)
				}
			}
			last := at((n-1)*5 + 1000)
			e.wantArgsRunAt("after the enqueues", id, n-1, last, job.StateScheduled)
			res := e.claim(store.ClaimParams{Now: last.Add(time.Hour), Limit: 10})
			if len(res.Jobs) != 1 || res.Jobs[0].ID != id || !jsonEqual(res.Jobs[0].Args, fmt.Appendf(nil, `{"n":%d}`, n-1)) {
				t.Errorf("claim: got %v, want job %d with the last args", idsOf(res.Jobs), id)
			}
		}},
		{"DebounceMaxWaitBoundsThePush", func(t *testing.T, e *env) {
			d := job.Debounce{Period: time.Second, MaxWait: 2500 * time.Millisecond}
			id := e.add(t0, debounced("key", 0, d))
			wantDebounced(t, "at 900ms", e.enqueue(at(900), debounced("key", 1, d))[0], id, job.StateScheduled)
			e.wantArgsRunAt("at 900ms", id, 1, at(1900), job.StateScheduled)
			wantDebounced(t, "at 1800ms", e.enqueue(at(1800), debounced("key", 2, d))[0], id, job.StateScheduled)
			e.wantArgsRunAt("at 1800ms: capped at the max wait", id, 2, at(2500), job.StateScheduled)
			wantDebounced(t, "at 2400ms", e.enqueue(at(2400), debounced("key", 3, d))[0], id, job.StateScheduled)
			e.wantArgsRunAt("at 2400ms", id, 3, at(2500), job.StateScheduled)
			if ids := e.claimIDs(at(2500), 10); len(ids) != 1 || ids[0] != id {
				t.Errorf("claim at the max wait: got %v, want [%d]", ids, id)
			}
		}},
		{"DebouncePastMaxWaitMakesAvailable", func(t *testing.T, e *env) {
			d := job.Debounce{Period: time.Second, MaxWait: 2 * time.Second}
			// A job held back (a plain unique job a minute ahead) past the
			// max wait counted from its creation runs at that deadline.
			id := e.add(t0, &job.Job{Kind: "k", UniqueKey: "key", RunAt: at(60000)})
			wantDebounced(t, "at 3s", e.enqueue(at(3000), debounced("key", 7, d))[0], id, job.StateAvailable)
			e.wantArgsRunAt("at 3s", id, 7, at(2000), job.StateAvailable)
		}},
		{"DebounceRetryingKeepsItsBackoff", func(t *testing.T, e *env) {
			h := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "key"}, job.StateRetrying) // run-at an hour ahead
			wantDebounced(t, "into a retrying job", e.enqueue(at(10), debounced("key", 3, period))[0], h.ID, job.StateScheduled)
			e.wantArgsRunAt("into a retrying job", h.ID, 3, h.RunAt, job.StateScheduled)
			if g := e.get(h.ID); g.Attempt != 1 || g.LastError != "boom" {
				t.Errorf("retrying job after the merge: attempt %d last error %q, want 1 and %q", g.Attempt, g.LastError, "boom")
			}
		}},
		{"DebounceRunningHolderGivesUpItsKey", func(t *testing.T, e *env) {
			h := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "key"}, job.StateRunning)
			r := e.enqueue(at(10), debounced("key", 1, period))[0]
			wantNew(t, "while the holder runs", r)
			if r.Debounced || r.ID == h.ID || r.State != job.StateScheduled {
				t.Errorf("while the holder runs: got ID %d Debounced %v state %s, want a new scheduled job", r.ID, r.Debounced, r.State)
			}
			if g := e.get(h.ID); g.State != job.StateRunning || g.UniqueKey != "" {
				t.Errorf("running holder: state %s key %q, want running with no key", g.State, g.UniqueKey)
			}
			wantDebounced(t, "next enqueue", e.enqueue(at(20), debounced("key", 2, period))[0], r.ID, job.StateScheduled)
			wantDup(t, "a plain unique enqueue", e.enqueue(at(30), &job.Job{Kind: "k", UniqueKey: "key"})[0], r.ID, job.StateScheduled)
			e.finishOne(at(40), h, store.Outcome{State: job.StateRetrying, RunAt: at(5000), Error: "boom"})
			e.wantArgsRunAt("the new job", r.ID, 2, at(1020), job.StateScheduled)
			if g := e.get(h.ID); g.State != job.StateRetrying || g.UniqueKey != "" {
				t.Errorf("old holder after its attempt: state %s key %q, want retrying with no key", g.State, g.UniqueKey)
			}
		}},
		{"DebounceWithinOneCall", func(t *testing.T, e *env) {
			res := e.enqueue(t0, debounced("key", 1, period), &job.Job{Kind: "plain"}, debounced("key", 2, period),
				&job.Job{Kind: "k", UniqueKey: "key"}, debounced("other", 3, period))
			wantNew(t, "job 1", res[0])
			wantNew(t, "job 2", res[1])
			wantDebounced(t, "job 3", res[2], res[0].ID, job.StateScheduled)
			wantDup(t, "job 4", res[3], res[0].ID, job.StateScheduled)
			wantNew(t, "job 5", res[4])
			if !(res[0].ID < res[1].ID && res[1].ID < res[4].ID) {
				t.Errorf("IDs %d, %d, %d: want them increasing in call order", res[0].ID, res[1].ID, res[4].ID)
			}
			e.wantArgsRunAt("key's job", res[0].ID, 2, at(1000), job.StateScheduled)
			e.wantIDs("after the call", res[0].ID, res[1].ID, res[4].ID)
		}},
		{"DebounceRefusesBadInput", func(t *testing.T, e *env) {
			for _, j := range []*job.Job{
				{Kind: "k", Debounce: period},
				{Kind: "k", UniqueKey: "key", Debounce: job.Debounce{Period: -1}},
				{Kind: "k", UniqueKey: "key", Debounce: job.Debounce{Period: time.Second, MaxWait: time.Millisecond}},
			} {
				j.Queue, j.MaxAttempts, j.State, j.RunAt, j.CreatedAt = job.DefaultQueue, 1, job.StateScheduled, at(1000), t0
				if _, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}}); !isFieldError(err, "debounce") {
					t.Errorf("Enqueue(%+v): got %v, want a *job.FieldError on debounce", j.Debounce, err)
				}
			}
			e.wantIDs("after refused enqueues")
		}},
		{"DebounceConcurrentEnqueuesMakeOneJob", func(t *testing.T, e *env) {
			const per = 25
			ids := make([][]job.ID, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range per {
						j := validated(t, t0, debounced("key", g*per+i, period))
						res, err := e.s.Enqueue(e.ctx, store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
						if err != nil {
							t.Errorf("goroutine %d: Enqueue: %v", g, err)
							return
						}
						ids[g] = append(ids[g], res[0].ID)
					}
				})
			}
			wg.Wait()
			all := e.all()
			if len(all) != 1 {
				t.Fatalf("jobs stored: got %d, want 1", len(all))
			}
			for g := range ids {
				for _, id := range ids[g] {
					if id != all[0].ID {
						t.Errorf("goroutine %d: got ID %d, want %d", g, id, all[0].ID)
					}
				}
			}
		}},
	}
}

// isFieldError reports whether err is a *job.FieldError on a field under
// prefix.
func isFieldError(err error, prefix string) bool {
	var fe *job.FieldError
	return errors.As(err, &fe) && strings.HasPrefix(fe.Field, prefix)
}
