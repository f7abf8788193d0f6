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

// from iterates over the entries with IDs above id in ascending order, or,
// with desc, below id in descending order (id 0: from the highest).
func (x *index) from(id job.ID, desc bool) func(yield func(*entry) bool) {
	return func(yield func(*entry) bool) {
		if !desc {
			c0, i0 := split(max(id+1, 1))
			for c := c0; c < len(x.chunks); c, i0 = c+1, 0 {
				ch := x.chunks[c]
				if ch == nil {
					continue
				}
				for i := i0; i < len(ch.e); i++ {
					if e := ch.e[i]; e != nil && !yield(e) {
						return
					}
				}
			}
			return
		}
		last := 1<<chunkBits - 1
		c0, i0 := len(x.chunks)-1, last
		if id > 0 {
			if id == 1 {
				return
			}
			if c, i := split(id - 1); c < len(x.chunks) {
				c0, i0 = c, i
			}
		}
		for c := c0; c >= 0; c, i0 = c-1, last {
			ch := x.chunks[c]
			if ch == nil {
				continue
			}
			for i := i0; i >= 0; i-- {
				if e := ch.e[i]; e != nil && !yield(e) {
					return
				}
			}
		}
	}
}
