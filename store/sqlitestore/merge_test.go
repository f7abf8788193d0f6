package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// TestMergedEnqueues checks that the plain Enqueues of one batch, inserted
// by one statement (runMerged), each get the IDs of their own jobs, in
// order, with a cancelled request and a non-plain one (a unique key, run
// by its own function in a savepoint) in the same transaction, and that
// lane_counts counts them.
func TestMergedEnqueues(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	held := testJob(t, "held")
	held.UniqueKey = "u1"
	if _, err := s.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{held}}); err != nil {
		t.Fatal(err)
	}
	type call struct {
		kinds []string
		r     *request
		e     *enqueueReq
	}
	var calls []*call
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	commits := s.commits.Load()
	s.qmu.Lock()
	for i := range 6 {
		c := &call{}
		var js []*job.Job
		for k := range i%3 + 1 {
			kind := fmt.Sprintf("c%d-%d", i, k)
			c.kinds = append(c.kinds, kind)
			js = append(js, testJob(t, kind))
		}
		if i == 4 {
			js[0].UniqueKey = "u2" // not plain: runs alone, in a savepoint
		}
		rows, err := makeRows(js)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if i == 2 {
			ctx = cancelled
		}
		c.r, c.e = enqueueRequest(ctx, rows)
		c.r.done = make(chan struct{})
		s.queue = append(s.queue, c.r)
		calls = append(calls, c)
	}
	s.qcond.Signal()
	s.qmu.Unlock()
	seen := map[job.ID]bool{}
	for i, c := range calls {
		<-c.r.done
		if i == 2 {
			if !errors.Is(c.r.err, context.Canceled) {
				t.Errorf("cancelled call: %v", c.r.err)
			}
			continue
		}
		if c.r.err != nil {
			t.Fatalf("call %d: %v", i, c.r.err)
		}
		if len(c.e.res) != len(c.kinds) {
			t.Fatalf("call %d: %d results for %d jobs", i, len(c.e.res), len(c.kinds))
		}
		for k, res := range c.e.res {
			if seen[res.ID] || res.Duplicate {
				t.Errorf("call %d job %d: %+v (seen %v)", i, k, res, seen[res.ID])
			}
			seen[res.ID] = true
			j, err := s.Get(t.Context(), res.ID)
			if err != nil || j.Kind != c.kinds[k] || j.State != res.State {
				t.Errorf("call %d job %d: ID %d is %+v, %v; want kind %s", i, k, res.ID, j, err, c.kinds[k])
			}
		}
	}
	if n := s.commits.Load() - commits; n != 1 {
		t.Errorf("%d transactions, want 1", n)
	}
	st, err := s.Stats(t.Context(), store.StatsParams{})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, q := range st.ByQueue {
		for _, n := range q {
			total += n
		}
	}
	if total != 1+len(seen) {
		t.Errorf("Stats counts %d jobs, want %d", total, 1+len(seen))
	}
}
