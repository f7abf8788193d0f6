package memstore

import "math"

// runBlock is the number of items in each block of a run.
const runBlock = 1024

// maxRunPos bounds a run's positions: an entry keeps its position in idx,
// an int32, as -2-k.
const maxRunPos = math.MaxInt32 - 2

// runQueue is the sorted run of a jobHeap: items appended at the back and
// taken from the front, in blocks of runBlock. Positions grow from 0 and
// stay put while an item is in the run, so entries keep theirs in idx; the
// blocks wholly behind the first item are let go. A run that grows to a
// million items therefore never copies them, as a slice grown by doubling
// and compacted when half dead did (about two copies of each item, and
// fresh arrays of tens of megabytes to fault in: 7.6% of the CPU of
// EndToEndMemory with a backlog of two million).
//
// An item removed from the middle leaves a hole (an item without an
// entry), skipped when it reaches the front; a run that is mostly holes is
// rebuilt (compact), as is one whose positions reach max.
type runQueue struct {
	blocks []*[runBlock]item // blocks[i] holds positions base+i*runBlock, …
	base   int               // the position of blocks[0][0]
	first  int               // the first current item's position; == end: empty
	end    int               // the position after the last item
	holes  int               // items in [first, end) without an entry
	spare  *[runBlock]item   // a block let go, reused before a new one
	max    int               // positions end before it (0: maxRunPos; tests lower it)
}

// at returns the item at position k, which must be in [base, end).
func (r *runQueue) at(k int) *item {
	k -= r.base
	return &r.blocks[k/runBlock][k%runBlock]
}

func (r *runQueue) len() int    { return r.end - r.first - r.holes }
func (r *runQueue) empty() bool { return r.first == r.end }

// front and back return the first and the last item of a run that is not
// empty.
func (r *runQueue) front() *item { return r.at(r.first) }
func (r *runQueue) back() *item  { return r.at(r.end - 1) }

// push appends it, which must not sort before the last item, and sets its
// entry's idx.
func (r *runQueue) push(it item) {
	limit := r.max
	if limit == 0 {
		limit = maxRunPos
	}
	if r.end >= limit {
		r.compact()
	}
	if r.end-r.base == len(r.blocks)*runBlock {
		b := r.spare
		if b == nil {
			b = new([runBlock]item)
		}
		r.spare = nil
		r.blocks = append(r.blocks, b)
	}
	*r.at(r.end) = it
	it.e.idx = runIdx(r.end)
	r.end++
}

// remove takes out the entry at position k and returns it.
func (r *runQueue) remove(k int) *entry {
	it := r.at(k)
	e := it.e
	e.idx = -1
	it.e = nil
	r.holes++
	for r.first < r.end && r.at(r.first).e == nil {
		r.first++
		r.holes--
	}
	if r.first == r.end {
		r.reset()
		return e
	}
	for r.first-r.base >= runBlock { // blocks[0] is behind the front
		r.spare = r.blocks[0] // its items have no entries left
		r.blocks[0] = nil
		r.blocks = r.blocks[1:]
		r.base += runBlock
	}
	if r.holes > runBlock && r.holes >= (r.end-r.first)/2 {
		r.compact()
	}
	return e
}

// reset empties a run that has no current item, keeping one block.
func (r *runQueue) reset() {
	if len(r.blocks) > 0 {
		keep := r.blocks[len(r.blocks)-1]
		clear(r.blocks)
		r.blocks = append(r.blocks[:0], keep)
	}
	r.base, r.first, r.end, r.holes = 0, 0, 0, 0
}

// compact rebuilds the run without its holes, from position 0, moving its
// entries' idx (amortized O(1): at least half the items were holes, or
// maxRunPos pushes were made).
func (r *runQueue) compact() {
	var blocks []*[runBlock]item
	n := 0
	for k := r.first; k < r.end; k++ {
		it := r.at(k)
		if it.e == nil {
			continue
		}
		if n%runBlock == 0 {
			blocks = append(blocks, new([runBlock]item))
		}
		blocks[n/runBlock][n%runBlock] = *it
		it.e.idx = runIdx(n)
		n++
	}
	r.blocks, r.base, r.first, r.end, r.holes, r.spare = blocks, 0, 0, n, 0, nil
}

// each calls fn with every current item, holes included, in order.
func (r *runQueue) each(fn func(k int, it *item)) {
	for k := r.first; k < r.end; k++ {
		fn(k, r.at(k))
	}
}
