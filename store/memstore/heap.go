package memstore

import "github.com/hopperq/hopper/job"

// jobHeap is a 4-ary min-heap of entries that keeps each entry's index up to
// date, so an arbitrary entry can be removed or moved in O(log n): Cancel and
// Reschedule remove the real entry and never leave stale copies behind.
//
// Items carry their sort keys, so sifting compares within the heap's own
// array instead of chasing each entry's pointer; four children per node
// halve the depth of a binary heap. The ready heap orders by (priority,
// run-at, ID); the timed heap by (run-at, ID). Each entry is in at most one
// heap at a time, and its keys change only while it is out of every heap.
type jobHeap struct {
	items []item
	timed bool
}

type item struct {
	priority int
	runAt    int64
	id       job.ID
	e        *entry
}

const arity = 4

func (h *jobHeap) less(a, b *item) bool {
	if !h.timed && a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

func (h *jobHeap) len() int { return len(h.items) }

func (h *jobHeap) peek() *entry {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0].e
}

// head returns the first item, which must exist.
func (h *jobHeap) head() *item { return &h.items[0] }

func (h *jobHeap) push(e *entry) {
	if len(h.items) == cap(h.items) {
		// Double, where append would grow a large slice by a quarter and
		// so copy it over and over while a backlog builds up.
		h.items = append(make([]item, 0, max(2*cap(h.items), 64)), h.items...)
	}
	h.items = append(h.items, item{priority: e.priority, runAt: e.runAt, id: e.id, e: e})
	i := len(h.items) - 1
	e.idx = int32(i)
	h.up(i)
}

func (h *jobHeap) pop() *entry {
	return h.remove(0)
}

// remove takes the entry at index i out of the heap.
func (h *jobHeap) remove(i int) *entry {
	n := len(h.items) - 1
	e := h.items[i].e
	if i != n {
		h.items[i] = h.items[n]
		h.items[i].e.idx = int32(i)
	}
	h.items[n] = item{}
	h.items = h.items[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	e.idx = -1
	// Give memory back when a drained heap is mostly empty.
	if c := cap(h.items); c > 1024 && n < c/4 {
		h.items = append(make([]item, 0, c/2), h.items...)
	}
	return e
}

func (h *jobHeap) up(j int) {
	x := h.items[j]
	for j > 0 {
		p := (j - 1) / arity
		if !h.less(&x, &h.items[p]) {
			break
		}
		h.items[j] = h.items[p]
		h.items[j].e.idx = int32(j)
		j = p
	}
	h.items[j] = x
	x.e.idx = int32(j)
}

func (h *jobHeap) down(i0 int) bool {
	n := len(h.items)
	x := h.items[i0]
	i := i0
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		m := first
		for c := first + 1; c < first+arity && c < n; c++ {
			if h.less(&h.items[c], &h.items[m]) {
				m = c
			}
		}
		if !h.less(&h.items[m], &x) {
			break
		}
		h.items[i] = h.items[m]
		h.items[i].e.idx = int32(i)
		i = m
	}
	h.items[i] = x
	x.e.idx = int32(i)
	return i > i0
}

// oldest returns the earliest run-at among the heap's items (0 if empty).
// It scans: the ready heap is ordered by priority first.
func (h *jobHeap) oldest() int64 {
	var o int64
	for i := range h.items {
		if r := h.items[i].runAt; o == 0 || r < o {
			o = r
		}
	}
	return o
}
