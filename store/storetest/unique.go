package storetest

import (
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// wantDup fails unless r reports a duplicate of holder in state st.
func wantDup(t *testing.T, what string, r store.EnqueueResult, holder job.ID, st job.State) {
	t.Helper()
	if !r.Duplicate || r.ID != holder || r.State != st {
		t.Errorf("%s: got ID %d Duplicate %v state %s, want ID %d Duplicate true state %s", what, r.ID, r.Duplicate, r.State, holder, st)
	}
}

// wantNew fails unless r reports a newly inserted job.
func wantNew(t *testing.T, what string, r store.EnqueueResult) {
	t.Helper()
	if r.Duplicate || r.ID <= 0 {
		t.Errorf("%s: got ID %d Duplicate %v, want a new job", what, r.ID, r.Duplicate)
	}
}

func uniqueCases() []testCase {
	return []testCase{
		{"UniqueDuplicateReturnsHolder", func(t *testing.T, e *env) {
			holder := e.add(t0, &job.Job{Kind: "k", UniqueKey: "key", RunAt: at(5000)})
			r := e.enqueue(at(1), &job.Job{Kind: "other kind", Queue: "other", UniqueKey: "key"})[0]
			wantDup(t, "Enqueue of a held key", r, holder, job.StateScheduled)
			e.wantIDs("after a duplicate Enqueue", holder)
			if g := e.get(holder); g.Kind != "k" || g.Queue != job.DefaultQueue {
				t.Errorf("holder: got kind %q queue %q, want it unchanged", g.Kind, g.Queue)
			}
		}},
		{"UniqueKeyHeldWhileWaitingOrRunning", func(t *testing.T, e *env) {
			for _, st := range []job.State{job.StateScheduled, job.StateAvailable, job.StateRunning, job.StateRetrying} {
				key := "key-" + st.String()
				holder := e.inState(t0, &job.Job{Kind: "k", Queue: st.String(), UniqueKey: key}, st)
				r := e.enqueue(at(1), &job.Job{Kind: "k", Queue: st.String(), UniqueKey: key})[0]
				wantDup(t, "Enqueue while the holder is "+st.String(), r, holder.ID, st)
			}
			if n := len(e.all()); n != 4 {
				t.Errorf("jobs stored: got %d, want 4", n)
			}
		}},
		{"UniqueKeyFreedWhenHolderFinishes", func(t *testing.T, e *env) {
			for _, st := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
				key := "key-" + st.String()
				holder := e.inState(t0, &job.Job{Kind: "k", Queue: st.String(), UniqueKey: key}, st)
				r := e.enqueue(at(1), &job.Job{Kind: "k", Queue: st.String(), UniqueKey: key})[0]
				wantNew(t, "Enqueue after the holder became "+st.String(), r)
				if r.ID == holder.ID || r.State != job.StateAvailable {
					t.Errorf("Enqueue after the holder became %s: got ID %d state %s, want a new available job", st, r.ID, r.State)
				}
				wantDup(t, "Enqueue while the new job waits", e.enqueue(at(2), &job.Job{Kind: "k", UniqueKey: key})[0], r.ID, job.StateAvailable)
			}
		}},
		{"UniqueKeyFreedWhenCancelledWhileRunning", func(t *testing.T, e *env) {
			c := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "key"}, job.StateRunning)
			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(1), ID: c.ID}); err != nil {
				t.Fatalf("Cancel: %v", err)
			}
			wantDup(t, "Enqueue while cancel is requested", e.enqueue(at(2), &job.Job{Kind: "k", UniqueKey: "key"})[0], c.ID, job.StateRunning)
			e.finishOne(at(3), c, store.Outcome{State: job.StateCancelled, Error: "cancelled"})
			wantNew(t, "Enqueue after the cancelled attempt ended", e.enqueue(at(4), &job.Job{Kind: "k", UniqueKey: "key"})[0])
		}},
		{"UniqueKeyFreedWhenRescueKillsHolder", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k", UniqueKey: "key", MaxAttempts: 1})
			e.claim(store.ClaimParams{Now: t0, Limit: 1, LeaseUntil: at(1000)})
			if _, err := e.s.Rescue(e.ctx, store.RescueParams{Now: at(1001)}); err != nil {
				t.Fatalf("Rescue: %v", err)
			}
			e.wantState(id, job.StateDead)
			wantNew(t, "Enqueue after the holder died", e.enqueue(at(2000), &job.Job{Kind: "k", UniqueKey: "key"})[0])
		}},
		{"UniqueDuplicatesWithinOneCall", func(t *testing.T, e *env) {
			res := e.enqueue(t0,
				&job.Job{Kind: "a", UniqueKey: "k1", RunAt: at(1000)},
				&job.Job{Kind: "b", UniqueKey: "k2"},
				&job.Job{Kind: "c", UniqueKey: "k1"},
				&job.Job{Kind: "d"},
				&job.Job{Kind: "e", UniqueKey: "k2"},
			)
			wantNew(t, "job a", res[0])
			wantNew(t, "job b", res[1])
			wantDup(t, "job c", res[2], res[0].ID, job.StateScheduled)
			wantNew(t, "job d", res[3])
			wantDup(t, "job e", res[4], res[1].ID, job.StateAvailable)
			if !(res[0].ID < res[1].ID && res[1].ID < res[3].ID) {
				t.Errorf("IDs of the inserted jobs: got %d, %d, %d, want increasing", res[0].ID, res[1].ID, res[3].ID)
			}
			e.wantIDs("after Enqueue", res[0].ID, res[1].ID, res[3].ID)
		}},
		{"UniqueEmptyKeyNeverCollides", func(t *testing.T, e *env) {
			res := e.enqueue(t0, &job.Job{Kind: "k"}, &job.Job{Kind: "k"})
			wantNew(t, "first job", res[0])
			wantNew(t, "second job", res[1])
			wantNew(t, "later job", e.enqueue(t0, &job.Job{Kind: "k"})[0])
			wantNew(t, "other key", e.enqueue(t0, &job.Job{Kind: "k", UniqueKey: "a"})[0])
			wantNew(t, "another key", e.enqueue(t0, &job.Job{Kind: "k", UniqueKey: "b"})[0])
		}},
		{"UniqueRetryDeadSkipsJobWhoseKeyIsHeld", func(t *testing.T, e *env) {
			dead := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "key"}, job.StateDead)
			other := e.inState(t0, &job.Job{Kind: "k", Queue: "other"}, job.StateDead)
			holder := e.add(at(1), &job.Job{Kind: "k", UniqueKey: "key", RunAt: at(5000)})
			n, err := e.s.RetryDead(e.ctx, store.RetryDeadParams{Now: at(2), All: true})
			if err != nil || n != 1 {
				t.Errorf("RetryDead (all): got %d, %v, want 1, nil", n, err)
			}
			e.unchanged("dead job whose key is held", dead)
			e.wantState(other.ID, job.StateAvailable)
			n, err = e.s.RetryDead(e.ctx, store.RetryDeadParams{Now: at(3), IDs: []job.ID{dead.ID}})
			if err != nil || n != 0 {
				t.Errorf("RetryDead(%d): got %d, %v, want 0, nil", dead.ID, n, err)
			}
			e.unchanged("dead job whose key is held", dead)

			if _, err := e.s.Cancel(e.ctx, store.CancelParams{Now: at(4), ID: holder}); err != nil {
				t.Fatalf("Cancel(%d): %v", holder, err)
			}
			n, err = e.s.RetryDead(e.ctx, store.RetryDeadParams{Now: at(5), IDs: []job.ID{dead.ID}})
			if err != nil || n != 1 {
				t.Errorf("RetryDead(%d) once the key is free: got %d, %v, want 1, nil", dead.ID, n, err)
			}
			e.wantState(dead.ID, job.StateAvailable)
			wantDup(t, "Enqueue after RetryDead", e.enqueue(at(6), &job.Job{Kind: "k", UniqueKey: "key"})[0], dead.ID, job.StateAvailable)
		}},
		{"UniqueRetryDeadOfTwoJobsWithOneKeyMovesOne", func(t *testing.T, e *env) {
			a := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "key"}, job.StateDead)
			b := e.inState(t0, &job.Job{Kind: "k", UniqueKey: "key"}, job.StateDead)
			n, err := e.s.RetryDead(e.ctx, store.RetryDeadParams{Now: at(1), All: true})
			if err != nil || n != 1 {
				t.Errorf("RetryDead: got %d, %v, want 1, nil", n, err)
			}
			sa, sb := e.state(a.ID), e.state(b.ID)
			if !(sa == job.StateAvailable && sb == job.StateDead || sa == job.StateDead && sb == job.StateAvailable) {
				t.Errorf("after RetryDead: got states %s and %s, want one available and one dead", sa, sb)
			}
		}},
	}
}
