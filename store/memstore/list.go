package memstore

// list is an intrusive doubly-linked list of entries, linked through their
// cold part: the running jobs, and the finished jobs of one state in the
// order they finished. Insertion and removal are O(1) and allocate nothing.
type list struct {
	first, last *entry
	n           int
}

func (l *list) push(e *entry) {
	c := e.c
	c.prev, c.next = l.last, nil
	if l.last != nil {
		l.last.c.next = e
	} else {
		l.first = e
	}
	l.last = e
	l.n++
}

func (l *list) remove(e *entry) {
	c := e.c
	if c.prev != nil {
		c.prev.c.next = c.next
	} else {
		l.first = c.next
	}
	if c.next != nil {
		c.next.c.prev = c.prev
	} else {
		l.last = c.prev
	}
	c.prev, c.next = nil, nil
	l.n--
}

// all iterates over the list; the body may remove the entry it is given.
func (l *list) all(yield func(*entry) bool) {
	for e := l.first; e != nil; {
		next := e.c.next
		if !yield(e) {
			return
		}
		e = next
	}
}
