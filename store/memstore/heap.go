package memstore

import "github.com/hopperq/hopper/job"

// jobHeap is a priority queue of entries: a 4-ary min-heap plus a sorted
// run. It keeps each entry's index up to date, so an arbitrary entry can be
// removed or moved in O(log n): Cancel and Reschedule remove the real entry
// and never leave stale copies behind.
//
// Items carry their sort keys, so sifting compares within the heap's own
// array instead of chasing each entry's pointer; four children per node
// halve the depth of a binary heap. The ready heap orders by (priority,
// run-at, ID); the timed heap by (run-at, ID). Each entry is in at most one
// heap at a time, and its keys change only while it is out of every heap.
//
// The run: jobs mostly arrive in order (enqueued now, with increasing IDs
// and the default priority), and a heap makes each of them pay O(log n)
// cache misses to come out again (10% of the CPU end to end with a
// backlog of a million). So an entry whose key is not below the run's last
// is appended to the run instead, in O(1); the others go to the heap, and
// the smaller of the heap's top and the run's first comes out first. An
// entry removed from the middle of the run leaves a hole (an item without
// an entry) that pop skips (see runQueue).
type jobHeap struct {
	items []item
	run   runQueue // sorted
	timed bool
}

type item struct {
	priority int
	runAt    int64
	id       job.ID
	e        *entry // nil: a hole in the run
}

const arity = 4

// An entry's idx is its position in items (≥ 0), or -2-k for position k in
// run; -1 means in no heap.
func runIdx(k int) int32 { return int32(-2 - k) }

func (h *jobHeap) less(a, b *item) bool {
	if !h.timed && a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

func (h *jobHeap) len() int { return len(h.items) + h.run.len() }

func (h *jobHeap) peek() *entry {
	if h.len() == 0 {
		return nil
	}
	return h.head().e
}

// head returns the first item, which must exist.
func (h *jobHeap) head() *item {
	if h.run.empty() || len(h.items) > 0 && h.less(&h.items[0], h.run.front()) {
		return &h.items[0]
	}
	return h.run.front()
}

func (h *jobHeap) push(e *entry) {
	it := item{priority: e.priority, runAt: e.runAt, id: e.id, e: e}
	if h.run.empty() || !h.less(&it, h.run.back()) {
		h.run.push(it)
		return
	}
	h.items = grow(h.items)
	h.items = append(h.items, it)
	i := len(h.items) - 1
	e.idx = int32(i)
	h.up(i)
}

// grow makes room for one more item, doubling where append would grow a
// large slice by a quarter and so copy it over and over while a backlog
// builds up.
func grow(items []item) []item {
	if len(items) < cap(items) {
		return items
	}
	return append(make([]item, 0, max(2*cap(items), 64)), items...)
}

func (h *jobHeap) pop() *entry {
	it := h.head()
	if it.e.idx >= 0 {
		return h.remove(0)
	}
	return h.remove(int(it.e.idx))
}

// remove takes the entry at index i (an entry's idx) out of the heap.
func (h *jobHeap) remove(i int) *entry {
	if i <= -2 {
		return h.run.remove(-2 - i)
	}
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
// It scans the heap (ordered by priority first); the run's first item has
// the earliest run-at of the run's only when all have one priority, so it
// scans the run too.
func (h *jobHeap) oldest() int64 {
	var o int64
	see := func(it *item) {
		if it.e != nil && (o == 0 || it.runAt < o) {
			o = it.runAt
		}
	}
	for i := range h.items {
		see(&h.items[i])
	}
	h.run.each(func(_ int, it *item) { see(it) })
	return o
}
