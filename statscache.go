package hopper

import (
	"context"
	"sync"
	"time"
)

// statsCache keeps the latest Stats of each window for StatsCached, and
// lets one caller at a time refresh a window's.
type statsCache struct {
	mu      sync.Mutex
	windows map[time.Duration]*cachedStats
}

type cachedStats struct {
	mu    sync.Mutex // held while refreshing: later callers wait and share
	stats Stats
	ok    bool
}

// StatsCached returns Stats(ctx, window) as of at most maxAge ago: pages,
// dashboards and metrics scrapes that ask often share one count of the
// store instead of counting on every request. Each window is cached apart;
// concurrent callers of a window share one refresh. The Stats returned must
// not be modified.
func (c *Client) StatsCached(ctx context.Context, window, maxAge time.Duration) (Stats, error) {
	sc := &c.statsCache
	sc.mu.Lock()
	if sc.windows == nil {
		sc.windows = make(map[time.Duration]*cachedStats)
	}
	w := sc.windows[window]
	if w == nil {
		w = new(cachedStats)
		sc.windows[window] = w
	}
	sc.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ok && c.now().Sub(w.stats.At) <= maxAge {
		return w.stats, nil
	}
	st, err := c.Stats(ctx, window)
	if err != nil {
		return Stats{}, err
	}
	w.stats, w.ok = st, true
	return st, nil
}
