package memstore

import "github.com/hopperq/hopper/job"

// chunkBits sets the size of an index chunk: 4,096 IDs.
const chunkBits = 12

// index maps job IDs to entries. IDs are dense (the store hands them out in
// sequence), so it is an array of fixed-size chunks rather than a hash map:
// a lookup is two loads, and inserting never rehashes. A chunk is freed once
// all its jobs are purged; retention purges the oldest first, so the index
// costs about 8 bytes per live job plus 8 bytes per 4,096 IDs ever issued.
type index struct {
	chunks []*chunk // chunk i holds IDs i<<chunkBits+1 …
	n      int
}

type chunk struct {
	live int
	e    [1 << chunkBits]*entry
}

func split(id job.ID) (int, int) {
	i := uint64(id - 1)
	return int(i >> chunkBits), int(i & (1<<chunkBits - 1))
}

func (x *index) get(id job.ID) *entry {
	if id < 1 {
		return nil
	}
	c, i := split(id)
	if c >= len(x.chunks) || x.chunks[c] == nil {
		return nil
	}
	return x.chunks[c].e[i]
}

func (x *index) put(e *entry) {
	c, i := split(e.id)
	for c >= len(x.chunks) {
		x.chunks = append(x.chunks, nil)
	}
	ch := x.chunks[c]
	if ch == nil {
		ch = new(chunk)
		x.chunks[c] = ch
	}
	if ch.e[i] == nil {
		ch.live++
		x.n++
	}
	ch.e[i] = e
}

func (x *index) del(id job.ID) {
	c, i := split(id)
	if c >= len(x.chunks) || x.chunks[c] == nil || x.chunks[c].e[i] == nil {
		return
	}
	ch := x.chunks[c]
	ch.e[i] = nil
	ch.live--
	x.n--
	if ch.live == 0 {
		x.chunks[c] = nil
	}
}

// all iterates over the entries in ID order.
func (x *index) all(yield func(*entry) bool) {
	for _, ch := range x.chunks {
		if ch == nil {
			continue
		}
		for _, e := range ch.e {
			if e != nil && !yield(e) {
				return
			}
		}
	}
}
