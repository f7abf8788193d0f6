package storetest

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func (e *env) stats(p store.StatsParams) store.Stats {
	e.t.Helper()
	st, err := e.s.Stats(e.ctx, p)
	if err != nil {
		e.t.Fatalf("Stats: %v", err)
	}
	return st
}

// wantCounts compares state counts; a missing state counts zero.
func wantCounts(t *testing.T, what string, got, want map[job.State]int) {
	t.Helper()
	for _, s := range job.States {
		if got[s] != want[s] {
			t.Errorf("%s %s: got %d, want %d", what, s, got[s], want[s])
		}
	}
	for s, n := range got {
		if !slices.Contains(job.States, s) {
			t.Errorf("%s: got %d jobs in unknown state %s", what, n, s)
		}
	}
}

func listCases() []testCase {
	return []testCase{
		{"GetUnknownReturnsErrNotFound", func(t *testing.T, e *env) {
			e.gone(1)
			id := e.finishedAt(0, "k", job.StateCompleted)
			e.gone(id + 1)
			e.gone(0)
			e.gone(-1)
			e.purge(store.PurgeParams{States: []job.State{job.StateCompleted}, All: true}, 1)
			e.gone(id)
		}},
		{"ListFiltersByState", func(t *testing.T, e *env) {
			by := map[job.State][]job.ID{}
			for _, st := range job.States {
				by[st] = append(by[st], e.inState(t0, &job.Job{Kind: "k", Queue: st.String()}, st).ID)
			}
			by[job.StateAvailable] = append(by[job.StateAvailable], e.add(t0, &job.Job{Kind: "k", Queue: "more"}))
			for _, st := range job.States {
				got := idsOf(e.list(store.ListParams{States: []job.State{st}}))
				wantIDList(t, "List("+st.String()+")", got, by[st])
			}
			got := idsOf(e.list(store.ListParams{States: []job.State{job.StateDead, job.StateCompleted}}))
			want := slices.Sorted(slices.Values(append(slices.Clone(by[job.StateCompleted]), by[job.StateDead]...)))
			wantIDList(t, "List(completed, dead)", got, want)
			if n := len(e.list(store.ListParams{})); n != 8 {
				t.Errorf("List(): got %d jobs, want 8", n)
			}
		}},
		{"ListFiltersByQueueAndKind", func(t *testing.T, e *env) {
			ax := e.add(t0, &job.Job{Kind: "x", Queue: "a"})
			ay := e.add(t0, &job.Job{Kind: "y", Queue: "a"})
			bx := e.add(t0, &job.Job{Kind: "x", Queue: "b"})
			ax2 := e.add(t0, &job.Job{Kind: "x", Queue: "a", RunAt: at(1000)})
			wantIDList(t, "List(queue a)", idsOf(e.list(store.ListParams{Queue: "a"})), []job.ID{ax, ay, ax2})
			wantIDList(t, "List(kind x)", idsOf(e.list(store.ListParams{Kind: "x"})), []job.ID{ax, bx, ax2})
			wantIDList(t, "List(queue a, kind x)", idsOf(e.list(store.ListParams{Queue: "a", Kind: "x"})), []job.ID{ax, ax2})
			wantIDList(t, "List(queue a, kind x, scheduled)", idsOf(e.list(store.ListParams{Queue: "a", Kind: "x", States: []job.State{job.StateScheduled}})), []job.ID{ax2})
			wantIDList(t, "List(queue c)", idsOf(e.list(store.ListParams{Queue: "c"})), nil)
		}},
		{"ListPagesWithAfterID", func(t *testing.T, e *env) {
			ids := e.addN(t0, 7, "k", "")
			wantIDList(t, "List page 1", idsOf(e.list(store.ListParams{Limit: 3})), ids[:3])
			wantIDList(t, "List page 2", idsOf(e.list(store.ListParams{Limit: 3, AfterID: ids[2]})), ids[3:6])
			wantIDList(t, "List page 3", idsOf(e.list(store.ListParams{Limit: 3, AfterID: ids[5]})), ids[6:])
			wantIDList(t, "List page 4", idsOf(e.list(store.ListParams{Limit: 3, AfterID: ids[6]})), nil)
		}},
		{"ListDesc", func(t *testing.T, e *env) {
			ids := e.addN(t0, 7, "k", "")
			rev := slices.Clone(ids)
			slices.Reverse(rev)
			wantIDList(t, "List desc", idsOf(e.list(store.ListParams{Desc: true})), rev)
			wantIDList(t, "List desc page 1", idsOf(e.list(store.ListParams{Desc: true, Limit: 3})), rev[:3])
			wantIDList(t, "List desc page 2", idsOf(e.list(store.ListParams{Desc: true, Limit: 3, AfterID: rev[2]})), rev[3:6])
			wantIDList(t, "List desc page 3", idsOf(e.list(store.ListParams{Desc: true, Limit: 3, AfterID: rev[5]})), rev[6:])
		}},
		{"ListDefaultLimitIs100", func(t *testing.T, e *env) {
			batch := make([]*job.Job, 150)
			for i := range batch {
				batch[i] = &job.Job{Kind: "k"}
			}
			res := e.enqueue(t0, batch...)
			got := idsOf(e.list(store.ListParams{}))
			want := make([]job.ID, 100)
			for i := range want {
				want[i] = res[i].ID
			}
			wantIDList(t, "List()", got, want)
		}},
		{"ListReturnsCopies", func(t *testing.T, e *env) {
			id := e.add(t0, &job.Job{Kind: "k"})
			js := e.list(store.ListParams{})
			if len(js) != 1 {
				t.Fatalf("List: got IDs %v, want [%d]", idsOf(js), id)
			}
			js[0].Kind, js[0].State = "mutated", job.StateDead
			if g := e.get(id); g.Kind != "k" || g.State != job.StateAvailable {
				t.Errorf("Get after changing a listed job: got kind %q state %s, want k available", g.Kind, g.State)
			}
		}},
		{"StatsByQueueAndState", func(t *testing.T, e *env) {
			if st := e.stats(store.StatsParams{Now: t0}); len(st.ByQueue) != 0 {
				t.Errorf("Stats of an empty store: got %v, want no queues", st.ByQueue)
			}
			want := map[string]map[job.State]int{"a": {}, "b": {}, "c": {}}
			for _, st := range []job.State{job.StateAvailable, job.StateAvailable, job.StateScheduled} {
				e.inState(t0, &job.Job{Kind: "k", Queue: "a"}, st)
				want["a"][st]++
			}
			for _, st := range []job.State{job.StateRunning, job.StateRetrying, job.StateCompleted, job.StateCompleted} {
				e.inState(t0, &job.Job{Kind: "k", Queue: "b"}, st)
				want["b"][st]++
			}
			for _, st := range []job.State{job.StateDead, job.StateCancelled} {
				e.inState(t0, &job.Job{Kind: "k", Queue: "c"}, st)
				want["c"][st]++
			}
			got := e.stats(store.StatsParams{Now: t0}).ByQueue
			if qs := slices.Sorted(maps.Keys(got)); !slices.Equal(qs, []string{"a", "b", "c"}) {
				t.Errorf("Stats queues: got %v, want [a b c]", qs)
			}
			for q, w := range want {
				wantCounts(t, "Stats queue "+q, got[q], w)
			}
		}},
		{"CountFiltersByStateQueueAndKind", func(t *testing.T, e *env) {
			ctx := context.Background()
			count := func(p store.ListParams) int {
				t.Helper()
				n, err := e.s.Count(ctx, p)
				if err != nil {
					t.Fatalf("Count(%+v): %v", p, err)
				}
				return n
			}
			if n := count(store.ListParams{}); n != 0 {
				t.Errorf("Count of an empty store: got %d, want 0", n)
			}
			// inState claims to reach running or dead: those come first.
			e.inState(t0, &job.Job{Kind: "email", Queue: "a"}, job.StateDead)
			e.inState(t0, &job.Job{Kind: "email", Queue: "b"}, job.StateRunning)
			e.inState(t0, &job.Job{Kind: "email", Queue: "a"}, job.StateAvailable)
			e.inState(t0, &job.Job{Kind: "report", Queue: "a"}, job.StateAvailable)
			e.inState(t0, &job.Job{Kind: "email", Queue: "b"}, job.StateScheduled)
			for _, tc := range []struct {
				p    store.ListParams
				want int
			}{
				{store.ListParams{}, 5},
				{store.ListParams{Queue: "a"}, 3},
				{store.ListParams{Kind: "email"}, 4},
				{store.ListParams{Kind: "email", Queue: "b"}, 2},
				{store.ListParams{States: []job.State{job.StateAvailable}}, 2},
				{store.ListParams{States: []job.State{job.StateAvailable, job.StateScheduled}, Kind: "email"}, 2},
				{store.ListParams{States: []job.State{job.StateDead}, Queue: "b"}, 0},
				{store.ListParams{Kind: "nope"}, 0},
				{store.ListParams{Limit: 1, AfterID: 100}, 5}, // paging is ignored
			} {
				if got := count(tc.p); got != tc.want {
					t.Errorf("Count(%+v): got %d, want %d", tc.p, got, tc.want)
				}
			}
		}},
		{"ListCreatedRangeBothWays", func(t *testing.T, e *env) {
			var ids []job.ID
			for i := range 6 {
				ids = append(ids, e.add(at(i*1000), &job.Job{Kind: "k"}))
			}
			e.inState(at(6000), &job.Job{Kind: "k", Queue: "q2"}, job.StateCompleted)
			p := store.ListParams{CreatedAfter: at(1000), CreatedBefore: at(4000), Limit: 2}
			wantIDList(t, "created in [1s, 4s), first page", idsOf(e.list(p)), ids[1:3])
			p.AfterID = ids[2]
			wantIDList(t, "second page", idsOf(e.list(p)), ids[3:4])
			p = store.ListParams{CreatedAfter: at(1000), CreatedBefore: at(4000), Desc: true, Limit: 2}
			wantIDList(t, "newest first, first page", idsOf(e.list(p)), []job.ID{ids[3], ids[2]})
			p.AfterID = ids[2]
			wantIDList(t, "newest first, second page", idsOf(e.list(p)), ids[1:2])
			p = store.ListParams{States: []job.State{job.StateAvailable}, Desc: true, AfterID: ids[5], Limit: 10}
			wantIDList(t, "available below the last, newest first", idsOf(e.list(p)), []job.ID{ids[4], ids[3], ids[2], ids[1], ids[0]})
		}},
		{"StatsOldestAvailable", func(t *testing.T, e *env) {
			e.add(t0, &job.Job{Kind: "k", Queue: "a", RunAt: at(-5000)})
			e.add(t0, &job.Job{Kind: "k", Queue: "a", Priority: -1})
			e.add(t0, &job.Job{Kind: "other", Queue: "a", RunAt: at(-7000), Priority: 3})
			e.add(t0, &job.Job{Kind: "k", Queue: "b", RunAt: at(60000)}) // scheduled
			e.inState(t0, &job.Job{Kind: "k", Queue: "c", RunAt: at(-9000)}, job.StateRunning)
			st := e.stats(store.StatsParams{Now: at(100)})
			if len(st.OldestAvailable) != 1 {
				t.Fatalf("OldestAvailable: %v, want queue a only", st.OldestAvailable)
			}
			wantTime(t, "OldestAvailable of queue a", st.OldestAvailable["a"], at(-7000))
		}},
		{"StatsSeries", func(t *testing.T, e *env) {
			e.finishedAt(500, "early", job.StateCompleted) // before the window
			e.finishedAt(1000, "c1", job.StateCompleted)
			e.finishedAt(1999, "c2", job.StateCompleted)
			e.finishedAt(2000, "c3", job.StateCompleted)
			e.finishedAt(3500, "d1", job.StateDead)
			e.finishedAt(3999, "x1", job.StateCancelled)
			st := e.stats(store.StatsParams{Now: at(4000), FinishedSince: at(1000), Step: time.Second})
			want := map[job.State][]int{
				job.StateCompleted: {2, 1, 0, 0},
				job.StateDead:      {0, 0, 1, 0},
				job.StateCancelled: {0, 0, 1, 0},
			}
			for state, w := range want {
				if !slices.Equal(st.Series[state], w) {
					t.Errorf("Series[%s]: got %v, want %v", state, st.Series[state], w)
				}
			}
			if st := e.stats(store.StatsParams{Now: at(4000), FinishedSince: at(1000)}); st.Series != nil {
				t.Errorf("Series without a Step: %v, want nil", st.Series)
			}
		}},
		{"StatsFinishedSince", func(t *testing.T, e *env) {
			e.finishedAt(1000, "c1", job.StateCompleted)
			e.finishedAt(3000, "c2", job.StateCompleted)
			e.finishedAt(2000, "c3", job.StateCompleted)
			e.finishedAt(2000, "d1", job.StateDead)
			e.finishedAt(1999, "d2", job.StateDead)
			e.finishedAt(3000, "x1", job.StateCancelled)
			e.inState(at(4000), &job.Job{Kind: "r", Queue: "r"}, job.StateRetrying)
			e.add(at(4000), &job.Job{Kind: "a"})
			st := e.stats(store.StatsParams{Now: at(5000), FinishedSince: at(2000)})
			wantCounts(t, "Stats finished since t0+2s", st.Finished, map[job.State]int{
				job.StateCompleted: 2, job.StateDead: 1, job.StateCancelled: 1,
			})
			wantTime(t, "FirstFinished since t0+2s", st.FirstFinished, at(2000))
			st = e.stats(store.StatsParams{Now: at(5000), FinishedSince: at(1000)})
			wantCounts(t, "Stats finished since t0+1s", st.Finished, map[job.State]int{
				job.StateCompleted: 3, job.StateDead: 2, job.StateCancelled: 1,
			})
			wantTime(t, "FirstFinished since t0+1s", st.FirstFinished, at(1000))
			if st := e.stats(store.StatsParams{Now: at(5000)}); !st.FirstFinished.IsZero() {
				t.Errorf("FirstFinished without FinishedSince: %v, want zero", st.FirstFinished)
			}
		}},
	}
}
