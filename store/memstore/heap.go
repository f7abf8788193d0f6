package memstore

// jobHeap is a binary min-heap of entries that keeps each entry's index up to
// date, so an arbitrary entry can be removed or moved in O(log n): Cancel and
// Reschedule remove the real entry and never leave stale copies behind.
//
// The ready heap orders by (priority, run-at, ID); the timed heap by (run-at,
// ID). Each entry is in at most one heap at a time.
type jobHeap struct {
	es    []*entry
	timed bool
}

func (h *jobHeap) less(a, b *entry) bool {
	if !h.timed && a.priority != b.priority {
		return a.priority < b.priority
	}
	if a.runAt != b.runAt {
		return a.runAt < b.runAt
	}
	return a.id < b.id
}

func (h *jobHeap) len() int { return len(h.es) }

func (h *jobHeap) peek() *entry {
	if len(h.es) == 0 {
		return nil
	}
	return h.es[0]
}

func (h *jobHeap) push(e *entry) {
	e.idx = int32(len(h.es))
	h.es = append(h.es, e)
	h.up(len(h.es) - 1)
}

func (h *jobHeap) pop() *entry {
	return h.remove(0)
}

// remove takes the entry at index i out of the heap.
func (h *jobHeap) remove(i int) *entry {
	n := len(h.es) - 1
	e := h.es[i]
	if i != n {
		h.swap(i, n)
	}
	h.es[n] = nil
	h.es = h.es[:n]
	if i != n {
		if !h.down(i) {
			h.up(i)
		}
	}
	e.idx = -1
	// Give memory back when a drained heap is mostly empty.
	if c := cap(h.es); c > 1024 && n < c/4 {
		h.es = append(make([]*entry, 0, c/2), h.es...)
	}
	return e
}

func (h *jobHeap) swap(i, j int) {
	h.es[i], h.es[j] = h.es[j], h.es[i]
	h.es[i].idx = int32(i)
	h.es[j].idx = int32(j)
}

func (h *jobHeap) up(j int) {
	for j > 0 {
		i := (j - 1) / 2
		if !h.less(h.es[j], h.es[i]) {
			break
		}
		h.swap(i, j)
		j = i
	}
}

func (h *jobHeap) down(i0 int) bool {
	i, n := i0, len(h.es)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		j := l
		if r := l + 1; r < n && h.less(h.es[r], h.es[l]) {
			j = r
		}
		if !h.less(h.es[j], h.es[i]) {
			break
		}
		h.swap(i, j)
		i = j
	}
	return i > i0
}
