package sqlitestore_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// TestFinishSetMatchesOneByOne finishes the same jobs with one Finish call
// of many outcomes (the set-based statement) and with one call per outcome
// (the per-row statement), and checks the jobs end up identical.
func TestFinishSetMatchesOneByOne(t *testing.T) {
	t.Parallel()
	var got [2][]*job.Job
	for k := range 2 {
		s := open(t, filepath.Join(t.TempDir(), "f.db"), sqlitestore.Options{})
		var js []*job.Job
		for range 8 {
			js = append(js, newJob(t, "k"))
		}
		ids := enqueue(t, s, js...)
		res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 8, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
		if err != nil || len(res.Jobs) != 8 {
			t.Fatalf("claim: %d jobs, %v", len(res.Jobs), err)
		}
		rec := func(i int, out string) job.Attempt {
			return job.Attempt{Attempt: 1, StartedAt: t0, Duration: time.Second, Worker: "w", Outcome: out, Error: "e<&>\"\n"}
		}
		outs := []store.Outcome{
			{ID: ids[0], Attempt: 1, Claim: 1, State: job.StateCompleted, Result: []byte(`{"a": 1,  "b":"<x>"}`), Record: rec(0, "completed")},
			{ID: ids[1], Attempt: 1, Claim: 1, State: job.StateRetrying, RunAt: t0.Add(time.Hour), Error: "boom \"q\" <&> é", Record: rec(1, "failed")},
			{ID: ids[2], Attempt: 1, Claim: 1, State: job.StateDead, Error: "fatal", Record: rec(2, "failed")},
			{ID: ids[3], Attempt: 1, Claim: 1, State: job.StateCancelled, Record: rec(3, "cancelled")},
			{ID: ids[4], Attempt: 1, Claim: 1, State: job.StateAvailable, Record: rec(4, "interrupted")},
			{ID: ids[5], Attempt: 2, Claim: 1, State: job.StateCompleted, Record: rec(5, "completed")}, // lease lost
			{ID: ids[6], Attempt: 1, Claim: 1, State: job.StateCompleted, Record: rec(6, "completed")},
			{ID: 999, Attempt: 1, Claim: 1, State: job.StateCompleted, Record: rec(7, "completed")}, // unknown
		}
		want := []job.State{job.StateCompleted, job.StateCancelled, job.StateDead, job.StateCancelled, job.StateAvailable, 0, job.StateCompleted, 0}
		// A requested cancel: it wins over a failure, not over success.
		for _, id := range []job.ID{ids[1], ids[6]} {
			if _, err := s.Cancel(t.Context(), store.CancelParams{Now: t0, ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		var applied []job.State
		if k == 0 {
			applied, err = s.Finish(t.Context(), store.FinishParams{Now: t0.Add(time.Second), Outcomes: outs})
			if err != nil {
				t.Fatal(err)
			}
		} else {
			for _, o := range outs {
				a, err := s.Finish(t.Context(), store.FinishParams{Now: t0.Add(time.Second), Outcomes: []store.Outcome{o}})
				if err != nil {
					t.Fatal(err)
				}
				applied = append(applied, a...)
			}
		}
		if !reflect.DeepEqual(applied, want) {
			t.Errorf("k=%d applied %v, want %v", k, applied, want)
		}
		for _, id := range ids {
			j, err := s.Get(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			got[k] = append(got[k], j)
		}
		// Heartbeat, set-based: only running jobs of the worker.
		if _, err := s.Cancel(t.Context(), store.CancelParams{Now: t0, ID: ids[7]}); err != nil {
			t.Fatal(err)
		}
		lease := func(id job.ID) store.Lease { return store.Lease{ID: id, Claim: 1} }
		hb, err := s.Heartbeat(t.Context(), store.HeartbeatParams{Now: t0, Worker: "w",
			Jobs: []store.Lease{lease(ids[7]), lease(ids[5]), lease(ids[0]), lease(ids[7]), {ID: ids[5], Claim: 2}}, LeaseUntil: t0.Add(2 * time.Minute)})
		if err != nil || !reflect.DeepEqual(hb.Cancel, []job.ID{ids[7], ids[7]}) ||
			!reflect.DeepEqual(hb.Lost, []store.Lease{lease(ids[0]), {ID: ids[5], Claim: 2}}) {
			t.Errorf("heartbeat: %+v, %v", hb, err)
		}
		for _, id := range []job.ID{ids[5], ids[7]} {
			if j, _ := s.Get(t.Context(), id); !j.LeaseUntil.Equal(t0.Add(2 * time.Minute)) {
				t.Errorf("job %d: lease %v", id, j.LeaseUntil)
			}
		}
	}
	for i := range got[0] {
		if !reflect.DeepEqual(got[0][i], got[1][i]) {
			t.Errorf("job %d:\n set  %+v\n rows %+v", got[0][i].ID, got[0][i], got[1][i])
		}
	}
	if string(got[0][0].Result) != `{"a": 1,  "b":"<x>"}` || got[0][1].LastError != "boom \"q\" <&> é" {
		t.Errorf("result %q, last error %q", got[0][0].Result, got[0][1].LastError)
	}
	if j := got[0][1]; j.State != job.StateCancelled || j.Attempts[0].Outcome != "cancelled" {
		t.Errorf("failed attempt of a job whose cancel was requested: state %s outcome %q, want cancelled", j.State, j.Attempts[0].Outcome)
	}
	if j := got[0][6]; j.State != job.StateCompleted || j.Attempts[0].Outcome != "completed" {
		t.Errorf("successful attempt of a job whose cancel was requested: state %s outcome %q, want completed", j.State, j.Attempts[0].Outcome)
	}
}

// TestClaimManyQueues claims across more lanes than one statement merges
// (and fewer), with two kinds per queue and queue limits that span the
// lanes of a queue, and checks the claim order.
func TestClaimManyQueues(t *testing.T) {
	t.Parallel()
	for _, nq := range []int{3, 20} {
		s := open(t, filepath.Join(t.TempDir(), "q.db"), sqlitestore.Options{})
		var js []*job.Job
		for i := range nq * 3 {
			j := &job.Job{Kind: []string{"k", "l"}[(i/nq)%2], Queue: fmt.Sprintf("q%02d", i%nq), Priority: (i * 7) % 5, RunAt: t0.Add(-time.Duration(i%4) * time.Second), MaxAttempts: 3}
			if err := j.Validate(t0); err != nil {
				t.Fatal(err)
			}
			js = append(js, j)
		}
		ids := enqueue(t, s, js...)
		byID := map[job.ID]*job.Job{}
		for i, id := range ids {
			byID[id] = js[i]
		}
		limits := map[string]int{"q00": 2, "q01": 1, "q02": 0}
		res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 10, QueueLimits: limits, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		// Expected: every job, in claim order, within the queue limits.
		want := slices.Clone(ids)
		slices.SortFunc(want, func(a, b job.ID) int {
			ja, jb := byID[a], byID[b]
			if c := cmp.Compare(ja.Priority, jb.Priority); c != 0 {
				return c
			}
			if c := ja.RunAt.Compare(jb.RunAt); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		taken := map[string]int{}
		var wantIDs []job.ID
		for _, id := range want {
			q := byID[id].Queue
			if l, ok := limits[q]; ok && taken[q] >= l {
				continue
			}
			taken[q]++
			if len(wantIDs) < 10 {
				wantIDs = append(wantIDs, id)
			}
		}
		var got []job.ID
		for _, j := range res.Jobs {
			got = append(got, j.ID)
		}
		if !slices.Equal(got, wantIDs) {
			t.Errorf("%d queues: claimed %v, want %v", nq, got, wantIDs)
		}
	}
}
