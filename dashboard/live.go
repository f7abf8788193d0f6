package dashboard

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// Live updates. The hub keeps the latest counts (from Client.StatsCached)
// and a version number that grows whenever something a page shows may have
// changed: an event of the client (a job enqueued, started, finished…), or
// counts that differ from the last ones (changes by other processes,
// looked for every PollInterval while someone watches). Pages carry the
// version they show; /events streams the version (server-sent events), and
// app.js fetches the page again when it grows and swaps the parts marked
// data-live.
const (
	// liveGap is the least time between two pushed versions: a busy
	// queue refreshes open pages once a second, not once per job.
	liveGap = time.Second
	// liveDebounce gathers the events of one burst into one version.
	liveDebounce = 50 * time.Millisecond
	// heartbeat is how often a stream sends a "beat" event. A page whose
	// stream says nothing for three heartbeats shows it is disconnected
	// and opens another (app.js): a dead or hung server, or a connection
	// lost without an error, shows within about three seconds. The beats
	// also keep proxies from closing an idle stream, and a stream that
	// ends is retried after one heartbeat.
	heartbeat = time.Second
	// maxStream ends a stream after a while; the browser reconnects.
	maxStream = 10 * time.Minute
	// streamWriteTimeout bounds each write of a stream: the deadline of
	// the connection is set anew before each one (replacing the server's
	// WriteTimeout, which would cut every stream), so a browser that stops
	// reading is cut off within heartbeat+streamWriteTimeout.
	streamWriteTimeout = 10 * time.Second
	// refreshTimeout bounds one count of the store.
	refreshTimeout = 30 * time.Second
)

// hub is the dashboard's one goroutine: it reads the client's events,
// keeps the counts fresh, and wakes the live streams.
type hub struct {
	c      *hopper.Client
	maxAge time.Duration
	poll   time.Duration
	log    *slog.Logger

	sub   *hopper.Subscription
	snap  atomic.Pointer[counts]
	ver   atomic.Uint64
	pokeC chan struct{} // asks for fresh counts; capacity 1

	mu        sync.Mutex
	listeners map[chan struct{}]struct{}

	ctx       context.Context // cancelled by close
	cancel    context.CancelFunc
	done      chan struct{} // closed when run returns
	closeOnce sync.Once
}

// counts are a count of the store, when this process got it, and what
// pages derive from it whatever the number of queues: the queues' names
// in order and the sums over them, worked out once per count (by the
// first page that needs them), so that a page costs what it shows, not
// what the store holds.
type counts struct {
	stats   hopper.Stats
	fetched time.Time

	once        sync.Once
	names       []string             // the queues with jobs, sorted
	totals      map[hopper.State]int // jobs by state over every queue
	oldest      time.Time            // earliest run-at of a ready job, any queue
	oldestQueue string               // its queue
}

// derive works out, once, what pages derive from c.stats.
func (c *counts) derive() *counts {
	c.once.Do(func() {
		c.names = slices.Sorted(maps.Keys(c.stats.Queues))
		c.totals = make(map[hopper.State]int, len(job.States))
		for _, q := range c.names {
			for s, n := range c.stats.Queues[q] {
				c.totals[s] += n
			}
			if t, ok := c.stats.OldestAvailable[q]; ok && (c.oldest.IsZero() || t.Before(c.oldest)) {
				c.oldest, c.oldestQueue = t, q
			}
		}
	})
	return c
}

// total is the number of jobs in state s, over every queue.
func (c *counts) total(s hopper.State) int { return c.derive().totals[s] }

func newHub(c *hopper.Client, o Options, log *slog.Logger) *hub {
	h := &hub{
		c: c, maxAge: o.StatsMaxAge, poll: o.PollInterval, log: log,
		sub:       c.Subscribe(),
		pokeC:     make(chan struct{}, 1),
		listeners: make(map[chan struct{}]struct{}),
		done:      make(chan struct{}),
	}
	h.ver.Store(1)
	h.ctx, h.cancel = context.WithCancel(context.Background())
	go h.run()
	return h
}

// run is the hub's loop. It returns when the client stops (its
// subscription closes) or close is called.
func (h *hub) run() {
	defer close(h.done)
	defer h.sub.Unsubscribe()
	tick := time.NewTicker(h.poll)
	defer tick.Stop()
	notify := time.NewTimer(time.Hour)
	notify.Stop()
	armed := false
	var last time.Time
	changed := func() {
		if armed {
			return
		}
		armed = true
		notify.Reset(max(liveDebounce, time.Until(last.Add(liveGap))))
	}
	for {
		select {
		case <-h.ctx.Done():
			return
		case _, ok := <-h.sub.C:
			if !ok {
				return
			}
			changed()
		case <-tick.C:
			if h.watched() && h.refresh() {
				changed()
			}
		case <-h.pokeC:
			if h.refresh() {
				changed()
			}
		case <-notify.C:
			armed = false
			last = time.Now()
			h.ver.Add(1)
			h.broadcast()
		}
	}
}

// close stops the hub and waits for it.
func (h *hub) close() {
	h.closeOnce.Do(h.cancel)
	<-h.done
}

// running reports whether the hub's loop still runs.
func (h *hub) running() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// version is the version of what pages show now.
func (h *hub) version() uint64 { return h.ver.Load() }

// poke asks the loop for fresh counts, without waiting.
func (h *hub) poke() {
	select {
	case h.pokeC <- struct{}{}:
	default:
	}
}

// refresh counts the store (through StatsCached) and reports whether the
// counts changed.
func (h *hub) refresh() bool {
	ctx, cancel := context.WithTimeout(h.ctx, refreshTimeout)
	defer cancel()
	st, err := h.c.StatsCached(ctx, statsWindow, h.maxAge)
	if err != nil {
		if h.ctx.Err() == nil {
			h.log.Warn("dashboard: count jobs", "err", err)
		}
		return false
	}
	_, changed := h.keep(st)
	return changed
}

// keep stores st as the latest counts and reports whether they differ
// from the previous ones (the first counts differ from nothing a page
// showed).
func (h *hub) keep(st hopper.Stats) (*counts, bool) {
	c := &counts{stats: st, fetched: time.Now()}
	prev := h.snap.Swap(c)
	return c, prev != nil && !sameCounts(prev.stats, st)
}

func sameCounts(a, b hopper.Stats) bool {
	return maps.EqualFunc(a.Queues, b.Queues, maps.Equal) && maps.Equal(a.Finished, b.Finished)
}

// counts returns the counts pages show: the latest the hub has if they
// are recent (asking it for fresher ones if older than StatsMaxAge), else
// a count made now through StatsCached. Pages thus never wait on a count
// of the store, except the first one and when the hub is stopped.
func (h *hub) counts(ctx context.Context) (*counts, error) {
	if c := h.snap.Load(); c != nil {
		age := time.Since(c.fetched)
		if age <= h.maxAge {
			return c, nil
		}
		if age <= max(10*h.maxAge, 30*time.Second) && h.running() {
			h.poke()
			return c, nil
		}
	}
	st, err := h.c.StatsCached(ctx, statsWindow, h.maxAge)
	if err != nil {
		return nil, err
	}
	c, _ := h.keep(st)
	return c, nil
}

// listen returns a channel that receives when the version grows, and the
// function that stops it.
func (h *hub) listen() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	h.listeners[ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.listeners, ch)
		h.mu.Unlock()
	}
}

func (h *hub) watched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.listeners) > 0
}

func (h *hub) broadcast() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.listeners {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// events streams the live version to a page (server-sent events): one
// "version" event at once, then one each time it grows, and a "beat"
// event every heartbeat (its data: the heartbeat in milliseconds). The
// stream ends when the page goes, the handler is closed, the client stops,
// after maxStream (the browser then reconnects), or when a write does not
// go through within streamWriteTimeout (a browser that stopped reading).
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	// write sends s at once, within streamWriteTimeout (where the
	// ResponseWriter lets its deadline be set; else the server's bounds
	// apply).
	write := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
		if _, err := io.WriteString(w, s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// And the end of the stream, which the server writes once this returns.
	defer func() { _ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) }()
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	if r.Method == http.MethodHead {
		return
	}
	ch, stop := h.hub.listen()
	defer stop()
	h.hub.poke()
	send := func(prefix string) bool {
		return write(prefix + "event: version\ndata: " + strconv.FormatUint(h.hub.version(), 10) + "\n\n")
	}
	ms := strconv.FormatInt(heartbeat.Milliseconds(), 10)
	if !send("retry: " + ms + "\n") {
		return
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	limit := time.NewTimer(maxStream)
	defer limit.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.hub.done:
			return
		case <-limit.C:
			return
		case <-beat.C:
			if !write("event: beat\ndata: " + ms + "\n\n") {
				return
			}
		case <-ch:
			if !send("") {
				return
			}
		}
	}
}
