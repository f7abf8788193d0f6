package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// queueControl returns the store's store.QueueControl, or skips the case.
func (e *env) queueControl() store.QueueControl {
	e.t.Helper()
	qc, ok := e.s.(store.QueueControl)
	if !ok {
		e.t.Skip("the store does not implement store.QueueControl")
	}
	return qc
}

// setQueue calls SetQueue and fails the test on an error.
func (e *env) setQueue(p store.SetQueueParams) store.QueueState {
	e.t.Helper()
	q, err := e.queueControl().SetQueue(e.ctx, p)
	if err != nil {
		e.t.Fatalf("SetQueue(%q): %v", p.Name, err)
	}
	return q
}

// pause pauses (or resumes) queue at now.
func (e *env) pause(now time.Time, queue string, paused bool) store.QueueState {
	e.t.Helper()
	return e.setQueue(store.SetQueueParams{Now: now, Name: queue, Paused: &paused})
}

// listQueues calls ListQueues and fails the test on an error.
func (e *env) listQueues() []store.QueueState {
	e.t.Helper()
	qs, err := e.queueControl().ListQueues(e.ctx)
	if err != nil {
		e.t.Fatalf("ListQueues: %v", err)
	}
	return qs
}

func queueCases() []testCase {
	return []testCase{
		{"QueuePauseHoldsEveryClaim", func(t *testing.T, e *env) {
			// Each form of claim — any queue, the paused queue named,
			// several named, kinds given — skips a paused queue.
			e.queueControl()
			held := e.add(t0, &job.Job{Kind: "a", Queue: "held", Priority: -10})
			held2 := e.add(t0, &job.Job{Kind: "b", Queue: "held", Priority: -10})
			free := e.add(t0, &job.Job{Kind: "a", Queue: "free"})
			e.pause(at(1), "held", true)
			for _, p := range []store.ClaimParams{
				{Now: at(2), Limit: 10, Queues: []string{"held"}},
				{Now: at(2), Limit: 10, Queues: []string{"held"}, Kinds: []string{"a", "b"}},
				{Now: at(2), Limit: 10, Queues: []string{"free", "held"}, Kinds: []string{"x"}},
			} {
				wantIDList(t, "Claim of a paused queue", idsOf(e.claim(p).Jobs), nil)
			}
			wantIDList(t, "Claim of any queue with one paused", idsOf(e.claim(store.ClaimParams{Now: at(2), Limit: 10}).Jobs),
				[]job.ID{free})
			e.wantState(held, job.StateAvailable)
			e.pause(at(3), "held", false)
			wantIDList(t, "Claim after the resume", sortedIDs(e.claim(store.ClaimParams{
				Now: at(4), Limit: 10, Queues: []string{"held", "free"}}).Jobs), []job.ID{held, held2})
		}},
		{"QueuePauseHoldsManyQueues", func(t *testing.T, e *env) {
			// A claim of several named queues and one of any queue take
			// the jobs of every queue that is not paused, in claim order.
			e.queueControl()
			var want []job.ID
			for _, q := range []string{"q1", "q2", "q3", "q4"} {
				id := e.add(t0, &job.Job{Kind: "k", Queue: q})
				if q == "q2" || q == "q4" {
					e.pause(t0, q, true)
					continue
				}
				want = append(want, id)
			}
			wantIDList(t, "Claim of the named queues", sortedIDs(e.claim(store.ClaimParams{
				Now: at(1), Limit: 10, Queues: []string{"q1", "q2", "q3", "q4"}}).Jobs), want)
			e.pause(at(2), "q4", false)
			e.add(at(2), &job.Job{Kind: "k", Queue: "q2"})
			q4 := e.claim(store.ClaimParams{Now: at(3), Limit: 10}).Jobs
			if len(q4) != 1 || q4[0].Queue != "q4" {
				t.Errorf("Claim of any queue after q4's resume: got %v, want q4's job", idsOf(q4))
			}
		}},
		{"QueuePauseLetsRunningJobsFinish", func(t *testing.T, e *env) {
			// A pause does not touch running jobs: their heart-beats,
			// outcomes and rescues apply as before.
			e.queueControl()
			a := e.add(t0, &job.Job{Kind: "k", Queue: "q"})
			b := e.add(t0, &job.Job{Kind: "k", Queue: "q"})
			c := e.add(t0, &job.Job{Kind: "k", Queue: "q"})
			ja := e.claimExpect(t0, "q", a)
			jb := e.claimExpect(t0, "q", b)
			e.pause(at(1), "q", true)
			hb := e.heartbeat(store.HeartbeatParams{Now: at(2), Worker: worker1,
				Jobs: []store.Lease{{ID: a, Claim: ja.Claims}}, LeaseUntil: at(60000)})
			if len(hb.Lost) != 0 {
				t.Errorf("Heartbeat in a paused queue: lost %v", hb.Lost)
			}
			e.finishOne(at(3), ja, store.Outcome{State: job.StateCompleted})
			e.wantState(a, job.StateCompleted)
			// b's lease runs out: the rescue gives it back, to wait.
			rescued := e.rescue(store.RescueParams{Now: jb.LeaseUntil.Add(time.Millisecond)})
			if len(rescued) != 1 || rescued[0].ID != b || rescued[0].State != job.StateAvailable {
				t.Errorf("Rescue in a paused queue: got %v, want job %d available", idsOf(rescued), b)
			}
			wantIDList(t, "Claim of the paused queue", idsOf(e.claim(store.ClaimParams{
				Now: at(60001), Limit: 10, Queues: []string{"q"}}).Jobs), nil)
			e.wantState(c, job.StateAvailable)
		}},
		{"QueuePauseHoldsPromotedJobs", func(t *testing.T, e *env) {
			// A job whose run-at comes while its queue is paused waits for
			// the resume like the others.
			e.queueControl()
			e.pause(t0, "q", true)
			id := e.add(t0, &job.Job{Kind: "k", Queue: "q", RunAt: at(10)})
			wantIDList(t, "Claim at the run-at, paused", e.claimIDs(at(20), 10), nil)
			e.pause(at(30), "q", false)
			wantIDList(t, "Claim after the resume", e.claimIDs(at(40), 10), []job.ID{id})
		}},
		{"QueueStateRoundTrips", func(t *testing.T, e *env) {
			if got := e.listQueues(); len(got) != 0 {
				t.Fatalf("ListQueues of a new store: got %+v, want none", got)
			}
			want := store.QueueState{Name: "b", Paused: true, PausedAt: at(1), UpdatedAt: at(1)}
			if got := e.pause(at(1), "b", true); !reflect.DeepEqual(got, want) {
				t.Errorf("SetQueue(pause b): got %+v, want %+v", got, want)
			}
			// Pausing again keeps the first pause's time.
			if got := e.pause(at(2), "b", true); !reflect.DeepEqual(got, want) {
				t.Errorf("SetQueue(pause b again): got %+v, want %+v", got, want)
			}
			e.pause(at(3), "a", true)
			got := e.listQueues()
			wantA := store.QueueState{Name: "a", Paused: true, PausedAt: at(3), UpdatedAt: at(3)}
			if !reflect.DeepEqual(got, []store.QueueState{wantA, want}) {
				t.Errorf("ListQueues: got %+v, want %+v", got, []store.QueueState{wantA, want})
			}
			// A resumed queue is in the zero state: its row is gone.
			if got := e.pause(at(4), "b", false); got.Paused || !got.PausedAt.IsZero() || got.Name != "b" {
				t.Errorf("SetQueue(resume b): got %+v, want b not paused", got)
			}
			if got := e.listQueues(); !reflect.DeepEqual(got, []store.QueueState{wantA}) {
				t.Errorf("ListQueues after the resume: got %+v, want %+v", got, []store.QueueState{wantA})
			}
			// Resuming a queue that has no row changes nothing.
			e.pause(at(5), "never", false)
			if got := e.listQueues(); len(got) != 1 {
				t.Errorf("ListQueues after resuming an unknown queue: got %+v", got)
			}
		}},
		{"QueueSetRefusesBadName", func(t *testing.T, e *env) {
			qc := e.queueControl()
			paused := true
			for _, name := range []string{"", "  ", "a\x00b", string([]byte{0xff})} {
				_, err := qc.SetQueue(e.ctx, store.SetQueueParams{Now: t0, Name: name, Paused: &paused})
				var fe *job.FieldError
				if !errors.As(err, &fe) || fe.Field != "name" {
					t.Errorf("SetQueue(name %q): got %v, want a *job.FieldError on name", name, err)
				}
			}
			if got := e.listQueues(); len(got) != 0 {
				t.Errorf("ListQueues after refused SetQueues: got %+v, want none", got)
			}
		}},
	}
}

// limit sets queue's concurrency limit at now (0 clears it).
func (e *env) limit(now time.Time, queue string, n int) store.QueueState {
	e.t.Helper()
	return e.setQueue(store.SetQueueParams{Now: now, Name: queue, Concurrency: &n})
}

// queueState returns queue's state as ListQueues reports it (zero if absent).
func (e *env) queueState(queue string) store.QueueState {
	e.t.Helper()
	for _, q := range e.listQueues() {
		if q.Name == queue {
			return q
		}
	}
	return store.QueueState{}
}

func concurrencyLimitCases() []testCase {
	return []testCase{
		{"QueueConcurrencyCapsClaims", func(t *testing.T, e *env) {
			// A limit of 2 over two lanes (kinds) of the queue: claims
			// take at most the free slots, whatever their filter; a
			// finish and a rescue each give one back; clearing the limit
			// frees the rest.
			e.queueControl()
			if got := e.limit(t0, "q", 2); got.Concurrency != 2 || got.Running != 0 {
				t.Fatalf("SetQueue(concurrency 2): %+v", got)
			}
			for i := range 6 {
				e.add(t0, &job.Job{Kind: []string{"a", "b"}[i%2], Queue: "q"})
			}
			other := e.addN(t0, 2, "a", "other")
			got := e.claim(store.ClaimParams{Now: at(1), Limit: 10}).Jobs
			var inQ []*job.Job
			for _, j := range got {
				if j.Queue == "q" {
					inQ = append(inQ, j)
				}
			}
			if len(inQ) != 2 || len(got) != 4 {
				t.Fatalf("Claim of any queue: %d jobs, %d of q; want 4, 2 of q", len(got), len(inQ))
			}
			for _, p := range []store.ClaimParams{
				{Now: at(2), Limit: 10, Queues: []string{"q"}},
				{Now: at(2), Limit: 10, Queues: []string{"q", "other"}},
				{Now: at(2), Limit: 10, Queues: []string{"q"}, Kinds: []string{"b"}},
				{Now: at(2), Limit: 10},
			} {
				wantIDList(t, "Claim with the queue at its limit", idsOf(e.claim(p).Jobs), nil)
			}
			if q := e.queueState("q"); q.Concurrency != 2 || q.Running != 2 {
				t.Errorf("ListQueues at the limit: %+v, want concurrency 2, running 2", q)
			}
			if n := len(got) - len(inQ); n != len(other) {
				t.Errorf("Claim of any queue: %d of the other queue, want %d", n, len(other))
			}
			// A finish gives its slot back.
			e.finishOne(at(3), inQ[0], store.Outcome{State: job.StateCompleted})
			next := e.claim(store.ClaimParams{Now: at(4), Limit: 10, Queues: []string{"q"}}).Jobs
			if len(next) != 1 {
				t.Fatalf("Claim after a finish: %d jobs, want 1", len(next))
			}
			// A rescue gives the slot of an expired lease back.
			rescued := e.rescue(store.RescueParams{Now: inQ[1].LeaseUntil.Add(time.Millisecond)})
			if len(rescued) == 0 {
				t.Fatalf("Rescue: none")
			}
			if q := e.queueState("q"); q.Running != 2-len(rescued)+countQueue(rescued, "other") {
				t.Errorf("ListQueues after the rescue of %d jobs: %+v", len(rescued), q)
			}
			now := inQ[1].LeaseUntil.Add(2 * time.Millisecond)
			after := e.claim(store.ClaimParams{Now: now, Limit: 10, Queues: []string{"q"}}).Jobs
			if want := 2 - (2 - len(rescued) + countQueue(rescued, "other")); len(after) != want {
				t.Errorf("Claim after the rescue: %d jobs, want %d", len(after), want)
			}
			// No limit: the rest.
			if got := e.limit(now, "q", 0); got.Concurrency != 0 || got.Running != 0 {
				t.Errorf("SetQueue(concurrency 0): %+v", got)
			}
			if q := e.queueState("q"); q.Name != "" {
				t.Errorf("ListQueues lists q without a limit: %+v", q)
			}
			rest := e.claim(store.ClaimParams{Now: now.Add(time.Millisecond), Limit: 10, Queues: []string{"q"}}).Jobs
			if len(rest) == 0 {
				t.Errorf("Claim without a limit: none")
			}
		}},
		{"QueueConcurrencyExactUnderConcurrentClaims", func(t *testing.T, e *env) {
			// Many claims at once never take more than the limit.
			e.queueControl()
			e.limit(t0, "q", 3)
			e.addN(t0, 40, "k", "q")
			var mu sync.Mutex
			total := 0
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 5 {
						res, err := e.s.Claim(e.ctx, store.ClaimParams{Now: at(1), Limit: 2, Worker: fmt.Sprint("w", w),
							LeaseUntil: at(60000), Queues: []string{"q"}})
						if err != nil {
							t.Errorf("Claim: %v", err)
							return
						}
						mu.Lock()
						total += len(res.Jobs)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			if total != 3 {
				t.Errorf("concurrent claims took %d jobs of a queue limited to 3, want 3", total)
			}
		}},
		{"QueueConcurrencyOneIsAMutex", func(t *testing.T, e *env) {
			// Limit 1: one job at a time, in claim order, each after the
			// previous one's finish, whatever else runs.
			e.queueControl()
			e.limit(t0, "m", 1)
			ids := e.addN(t0, 3, "k", "m")
			for i, id := range ids {
				now := at(10 * (i + 1))
				got := e.claim(store.ClaimParams{Now: now, Limit: 5}).Jobs
				if len(got) != 1 || got[0].ID != id {
					t.Fatalf("Claim %d: %v, want [%d]", i, idsOf(got), id)
				}
				wantIDList(t, "second claim", idsOf(e.claim(store.ClaimParams{Now: now, Limit: 5}).Jobs), nil)
				e.finishOne(now.Add(time.Millisecond), got[0], store.Outcome{State: job.StateRetrying, RunAt: at(100000), Error: "x"})
			}
		}},
		{"FinishClaimTakesFreedSlots", func(t *testing.T, e *env) {
			// A finish and a claim in one transaction: the claim sees
			// the slots the outcomes gave back, never more.
			fc, ok := e.s.(store.FinishClaimer)
			if !ok {
				t.Skip("not a store.FinishClaimer")
			}
			e.queueControl()
			e.limit(t0, "q", 2)
			ids := e.addN(t0, 5, "k", "q")
			// A claim that fills the queue reports it Held, whether or
			// not it asked for more than the free slots.
			first := e.claim(store.ClaimParams{Now: at(1), Limit: 2})
			if len(first.Jobs) != 2 || !first.Held {
				t.Fatalf("Claim of the free slots: %d jobs, Held %v; want 2, true", len(first.Jobs), first.Held)
			}
			a := first.Jobs[0]
			out := store.Outcome{ID: a.ID, Attempt: a.Attempt, Claim: a.Claims, State: job.StateCompleted,
				Record: record(a, at(2), job.StateCompleted.String(), "")}
			claimP := store.ClaimParams{Now: at(2), Limit: 10, Worker: worker1, LeaseUntil: at(2).Add(lease)}
			reached, res, err := fc.FinishClaim(e.ctx, store.FinishParams{Now: at(2), Outcomes: []store.Outcome{out}}, claimP)
			if err != nil {
				t.Fatalf("FinishClaim: %v", err)
			}
			if len(reached) != 1 || reached[0] != job.StateCompleted {
				t.Errorf("FinishClaim reached %v, want [completed]", reached)
			}
			wantIDList(t, "FinishClaim's claim", idsOf(res.Jobs), ids[2:3])
			if !res.Held {
				t.Errorf("FinishClaim at the limit again: Held false, want true")
			}
			if q := e.queueState("q"); q.Running != 2 {
				t.Errorf("after FinishClaim: running %d, want 2", q.Running)
			}
			// An outcome of a lost lease frees nothing: the claim takes
			// nothing.
			stale := out
			reached, res, err = fc.FinishClaim(e.ctx, store.FinishParams{Now: at(3), Outcomes: []store.Outcome{stale}},
				store.ClaimParams{Now: at(3), Limit: 10, Worker: worker1, LeaseUntil: at(3).Add(lease)})
			if err != nil || len(reached) != 1 || reached[0] != 0 || len(res.Jobs) != 0 {
				t.Errorf("FinishClaim of a lost lease: %v, %v, %v; want [0], no jobs, nil", reached, idsOf(res.Jobs), err)
			}
			// A refused outcome fails the call: nothing is claimed.
			b := first.Jobs[1]
			bad := store.Outcome{ID: b.ID, Attempt: b.Attempt, Claim: b.Claims, State: job.StateRunning}
			if _, _, err := fc.FinishClaim(e.ctx, store.FinishParams{Now: at(4), Outcomes: []store.Outcome{bad}},
				store.ClaimParams{Now: at(4), Limit: 10, Worker: worker1, LeaseUntil: at(4).Add(lease)}); err == nil {
				t.Errorf("FinishClaim of running -> running: no error")
			}
			if g := e.get(b.ID); g.State != job.StateRunning {
				t.Errorf("job %d after a refused FinishClaim: %s, want running", b.ID, g.State)
			}
			if q := e.queueState("q"); q.Running != 2 {
				t.Errorf("after a refused FinishClaim: running %d, want 2", q.Running)
			}
			// With no outcome it is a claim.
			e.finishOne(at(5), b, store.Outcome{State: job.StateCompleted})
			_, res, err = fc.FinishClaim(e.ctx, store.FinishParams{Now: at(6)},
				store.ClaimParams{Now: at(6), Limit: 10, Worker: worker1, LeaseUntil: at(6).Add(lease)})
			if err != nil {
				t.Fatalf("FinishClaim without outcomes: %v", err)
			}
			wantIDList(t, "FinishClaim without outcomes", idsOf(res.Jobs), ids[3:4])
		}},
		{"QueueConcurrencyRefusesBadLimit", func(t *testing.T, e *env) {
			qc := e.queueControl()
			for _, n := range []int{-1, store.MaxConcurrency + 1} {
				_, err := qc.SetQueue(e.ctx, store.SetQueueParams{Now: t0, Name: "q", Concurrency: &n})
				var fe *job.FieldError
				if !errors.As(err, &fe) || fe.Field != "concurrency" {
					t.Errorf("SetQueue(concurrency %d): %v, want a *job.FieldError on concurrency", n, err)
				}
			}
			if got := e.listQueues(); len(got) != 0 {
				t.Errorf("ListQueues after refused limits: %+v", got)
			}
		}},
	}
}

// countQueue counts the jobs of queue among jobs.
func countQueue(jobs []*job.Job, queue string) int {
	n := 0
	for _, j := range jobs {
		if j.Queue == queue {
			n++
		}
	}
	return n
}
