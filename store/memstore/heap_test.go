package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hopperq/hopper/job"
)

// TestHeapRandomOperations pushes, pops and removes arbitrary entries at
// random, checking after each step that every entry's index points at
// itself, that the heap and the run keep their order, and that pops come
// out in (priority, run-at, ID) order. Most pushes come in order, as jobs
// enqueued now do, and go to the run; the others to the heap.
func TestHeapRandomOperations(t *testing.T) {
	t.Parallel()
	for _, timed := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, uint64(len(t.Name()))))
		h := jobHeap{timed: timed}
		var in []*entry
		var next job.ID
		var clock int64
		check := func() {
			t.Helper()
			for i, it := range h.items {
				if int(it.e.idx) != i || it.id != it.e.id {
					t.Fatalf("item %d: entry %d has index %d", i, it.e.id, it.e.idx)
				}
				if i > 0 && h.less(&it, &h.items[(i-1)/arity]) {
					t.Fatalf("item %d is less than its parent", i)
				}
			}
			checkRun(t, &h)
		}
		inRun := 0
		for step := range 60000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(in) == 0:
				next++
				e := &entry{id: next, priority: rng.IntN(5) - 2, runAt: int64(rng.IntN(50)), idx: -1}
				if rng.IntN(4) > 0 { // in order: now, default priority
					clock += int64(rng.IntN(2))
					e.priority, e.runAt = 0, clock+50
				}
				h.push(e)
				if e.idx <= -2 {
					inRun++
				}
				in = append(in, e)
			case r < 7:
				e := h.pop()
				for _, o := range in {
					if o != e && (h.less(&item{o.priority, o.runAt, o.id, o}, &item{e.priority, e.runAt, e.id, e})) {
						t.Fatalf("step %d: popped %d before smaller %d", step, e.id, o.id)
					}
				}
				in = slices.DeleteFunc(in, func(o *entry) bool { return o == e })
			default:
				k := rng.IntN(len(in))
				e := in[k]
				if got := h.remove(int(e.idx)); got != e || e.idx != -1 {
					t.Fatalf("step %d: remove(%d) took %d", step, e.id, got.id)
				}
				in = slices.Delete(in, k, k+1)
			}
			if h.len() != len(in) {
				t.Fatalf("step %d: heap holds %d, want %d", step, h.len(), len(in))
			}
			if len(in) > 0 && h.peek() == nil {
				t.Fatalf("step %d: peek of a non-empty heap is nil", step)
			}
			if step%97 == 0 {
				check()
			}
		}
		check()
		if inRun < 3000 || len(h.items) == 0 {
			t.Fatalf("%d pushes went to the run, %d items in the heap: both should be exercised", inRun, len(h.items))
		}
	}
}

// TestHeapRunCompacts: a long run drained from the front gives its blocks
// back, keeping every index.
func TestHeapRunCompacts(t *testing.T) {
	t.Parallel()
	h := jobHeap{}
	var es []*entry
	for i := range 100000 {
		e := &entry{id: job.ID(i + 1), runAt: int64(i), idx: -1}
		h.push(e)
		es = append(es, e)
	}
	if len(h.items) != 0 || h.len() != len(es) {
		t.Fatalf("in-order pushes: %d in the heap, %d in all", len(h.items), h.len())
	}
	for i := range 99000 {
		if e := h.pop(); e != es[i] {
			t.Fatalf("pop %d: entry %d, want %d", i, e.id, es[i].id)
		}
	}
	if len(h.run.blocks) > 2 {
		t.Errorf("after draining: the run keeps %d blocks for 1,000 items; want the others given back", len(h.run.blocks))
	}
	checkRun(t, &h)
	if e := h.remove(int(es[99500].idx)); e != es[99500] || h.len() != 999 {
		t.Fatalf("remove after compaction: %v, %d left", e, h.len())
	}
}

// TestHeapRunDropsHoles: entries removed from the middle of a run whose
// first entry stays (a kind no worker takes, say) do not keep their slots
// for ever: the run is compacted once most of it is holes.
func TestHeapRunDropsHoles(t *testing.T) {
	t.Parallel()
	h := jobHeap{}
	first := &entry{id: 1, idx: -1}
	h.push(first)
	for i := range 100000 {
		e := &entry{id: job.ID(i + 2), runAt: int64(i), idx: -1}
		h.push(e)
		if got := h.remove(int(e.idx)); got != e {
			t.Fatalf("remove took %d, want %d", got.id, e.id)
		}
	}
	if h.len() != 1 || h.run.end-h.run.first > 2*runBlock+2 || len(h.run.blocks) > 3 || first.idx != runIdx(h.run.first) {
		t.Fatalf("after 100,000 pushes and removals behind a first entry: len %d, %d slots in %d blocks, first at %d",
			h.len(), h.run.end-h.run.first, len(h.run.blocks), first.idx)
	}
	checkRun(t, &h)
	if e := h.pop(); e != first || h.len() != 0 {
		t.Fatalf("pop: %v, %d left", e, h.len())
	}
}

// checkRun fails unless h's run is in order, each entry's index is its
// position, the holes are counted and the first item is not one.
func checkRun(t *testing.T, h *jobHeap) {
	t.Helper()
	r := &h.run
	holes := 0
	var prev *item
	r.each(func(k int, it *item) {
		if it.e == nil {
			holes++
		} else if it.e.idx != runIdx(k) || it.id != it.e.id {
			t.Fatalf("run item %d: entry %d has index %d", k, it.e.id, it.e.idx)
		}
		if prev != nil && h.less(it, prev) {
			t.Fatalf("run item %d is less than the one before", k)
		}
		prev = it
	})
	if holes != r.holes || (!r.empty() && r.front().e == nil) {
		t.Fatalf("run: %d holes counted %d, first is a hole: %v", holes, r.holes, !r.empty() && r.front().e == nil)
	}
	if want := (r.end - r.base + runBlock - 1) / runBlock; len(r.blocks) < want {
		t.Fatalf("run: %d blocks for positions %d–%d", len(r.blocks), r.base, r.end)
	}
}

// TestRunRenumbers: a run whose positions reach their limit is rebuilt
// from position 0, keeping its order and every entry's index.
func TestRunRenumbers(t *testing.T) {
	t.Parallel()
	h := jobHeap{}
	h.run.max = 3 * runBlock
	var in []*entry
	for i := range 10 * runBlock {
		e := &entry{id: job.ID(i + 1), runAt: int64(i), idx: -1}
		h.push(e)
		in = append(in, e)
		if i >= 100 { // keep the run short: positions, not items, reach the limit
			if got := h.pop(); got != in[0] {
				t.Fatalf("pop: %d, want %d", got.id, in[0].id)
			}
			in = in[1:]
		}
		if h.run.end > h.run.max {
			t.Fatalf("position %d past the limit %d", h.run.end, h.run.max)
		}
	}
	checkRun(t, &h)
	for _, e := range in {
		if got := h.pop(); got != e {
			t.Fatalf("pop: %d, want %d", got.id, e.id)
		}
	}
	if h.len() != 0 {
		t.Fatalf("%d left", h.len())
	}
}
