package metrics

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Other is the queue and kind label value of what the metrics count beyond
// their bounds (Options.MaxQueueKinds, Options.MaxQueues). Queue and kind
// names come from whoever enqueues jobs; without a bound, a client that
// invents names would make every scrape grow without end. A queue or kind
// really named "(other)" is counted with them.
const Other = "(other)"

// Defaults of the bounds in Options.
const (
	DefaultMaxQueueKinds = 100
	DefaultMaxQueues     = 100
)

// pair is a (queue, kind) label pair.
type pair struct{ queue, kind string }

// pairs admits the first max (queue, kind) pairs it is asked about; the
// others are labelled (Other, Other). Lookups take no lock: the admitted
// pairs are a map replaced whole (copied, at most max times) when one is
// added, and read through an atomic pointer.
type pairs struct {
	max   int
	known atomic.Pointer[map[pair]struct{}]
	mu    sync.Mutex // serializes additions
}

func newPairs(max int) *pairs {
	p := &pairs{max: max}
	p.known.Store(&map[pair]struct{}{})
	return p
}

// labels returns the labels (queue, kind) is counted under.
func (p *pairs) labels(queue, kind string) (string, string) {
	m := *p.known.Load()
	if _, ok := m[pair{queue, kind}]; ok {
		return queue, kind
	}
	if len(m) >= p.max {
		return Other, Other
	}
	return p.add(queue, kind)
}

func (p *pairs) add(queue, kind string) (string, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := *p.known.Load()
	if _, ok := m[pair{queue, kind}]; ok {
		return queue, kind
	}
	if len(m) >= p.max {
		return Other, Other
	}
	n := maps.Clone(m)
	n[pair{queue, kind}] = struct{}{}
	p.known.Store(&n)
	return queue, kind
}

// queueGauge is what the job gauges report of one queue label.
type queueGauge struct {
	name   string
	counts map[hopper.State]int
	oldest time.Time // the earliest run-at of its available jobs; zero if none
}

// queueGauges returns the job gauges of st by queue: every queue when
// there are at most max, else the max queues with the most jobs (ties by
// name), then Other with the sums of the rest and the oldest of their
// oldest available jobs. Ranking sorts the queues: 25 ms a scrape for
// 100,000 of them, next to the count of the store that found them.
func queueGauges(st hopper.Stats, max int) []queueGauge {
	out := make([]queueGauge, 0, min(len(st.Queues), max+1))
	if len(st.Queues) <= max {
		for q, counts := range st.Queues {
			out = append(out, queueGauge{q, counts, st.OldestAvailable[q]})
		}
		return out
	}
	type ranked struct {
		name string
		jobs int
	}
	all := make([]ranked, 0, len(st.Queues))
	for q, counts := range st.Queues {
		n := 0
		for _, c := range counts {
			n += c
		}
		all = append(all, ranked{q, n})
	}
	slices.SortFunc(all, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(b.jobs, a.jobs), cmp.Compare(a.name, b.name))
	})
	other := queueGauge{name: Other, counts: make(map[hopper.State]int, len(job.States))}
	for _, r := range all {
		if len(out) < max && r.name != Other { // a queue named "(other)" joins the rest
			out = append(out, queueGauge{r.name, st.Queues[r.name], st.OldestAvailable[r.name]})
			continue
		}
		for s, c := range st.Queues[r.name] {
			other.counts[s] += c
		}
		if t, ok := st.OldestAvailable[r.name]; ok && (other.oldest.IsZero() || t.Before(other.oldest)) {
			other.oldest = t
		}
	}
	return append(out, other)
}
