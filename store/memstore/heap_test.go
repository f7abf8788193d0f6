package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hopperq/hopper/job"
)

// TestHeapRandomOperations pushes, pops and removes arbitrary entries at
// random, checking after each step that every entry's index points at
// itself and that pops come out in (priority, run-at, ID) order.
func TestHeapRandomOperations(t *testing.T) {
	t.Parallel()
	for _, timed := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(7, uint64(len(t.Name()))))
		h := jobHeap{timed: timed}
		var in []*entry
		var next job.ID
		check := func() {
			for i, it := range h.items {
				if int(it.e.idx) != i || it.id != it.e.id {
					t.Fatalf("item %d: entry %d has index %d", i, it.e.id, it.e.idx)
				}
				if i > 0 && h.less(&it, &h.items[(i-1)/arity]) {
					t.Fatalf("item %d is less than its parent", i)
				}
			}
		}
		for step := range 20000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(in) == 0:
				next++
				e := &entry{id: next, priority: rng.IntN(5) - 2, runAt: int64(rng.IntN(50)), idx: -1}
				h.push(e)
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
			if len(h.items) != len(in) {
				t.Fatalf("step %d: heap holds %d, want %d", step, len(h.items), len(in))
			}
			if step%97 == 0 {
				check()
			}
		}
		check()
	}
}
