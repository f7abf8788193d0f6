package pgstore

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The clock decision: several hosts with skewed clocks share the database,
// and a lease or a run-at written by one is read by all. So every time the
// client stamps an operation with comes from one clock, the database
// server's: Store.Now (store.Clock) is this process's best estimate of it.
//
// Now does not ask the server (that would be a round trip per operation):
// it pairs one reading of the server's clock_timestamp() with the local
// clock at the middle of that query's round trip, and adds the local time
// elapsed since, measured on the monotonic clock, so that a jump of the
// local wall clock (NTP, an operator) changes nothing. The pairing with
// the shortest round trip of a few samples is kept: its error is at most
// half that round trip (well under a millisecond on a LAN). It is measured
// again every Options.ClockRefresh (30s), which bounds the drift of the
// local oscillator (tens of ppm: microseconds per 30s).

// clockSample pairs a local reading with the server's time then.
type clockSample struct {
	local  time.Time // with its monotonic reading
	server time.Time
	rtt    time.Duration
}

// serverClock is the estimate of the server's clock.
type serverClock struct {
	local  func() time.Time
	sample atomic.Pointer[clockSample]
}

func newServerClock(local func() time.Time) *serverClock {
	return &serverClock{local: local}
}

// now estimates the server's current time, in UTC.
func (c *serverClock) now() time.Time {
	s := c.sample.Load()
	if s == nil {
		return c.local().UTC()
	}
	return s.server.Add(c.local().Sub(s.local)).UTC()
}

// measure reads the server's clock n times on conn and keeps the reading
// with the shortest round trip.
func (c *serverClock) measure(ctx context.Context, conn *pgx.Conn, n int) error {
	var best *clockSample
	for i := 0; i < n; i++ {
		var srv pgtype.Timestamptz
		t0 := c.local()
		if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&srv); err != nil {
			return err
		}
		t1 := c.local()
		rtt := t1.Sub(t0)
		if best == nil || rtt < best.rtt {
			best = &clockSample{local: t0.Add(rtt / 2), server: srv.Time, rtt: rtt}
		}
	}
	c.sample.Store(best)
	return nil
}

// Now implements store.Clock: the database server's current time as this
// process best knows it (see above), in UTC. A client on this store stamps
// every operation with it, so leases, run-at times and rescues mean the
// same on every host whatever each host's clock says.
func (s *Store) Now() time.Time { return s.clock.now() }

// ClockOffset returns how far the server's clock is ahead of this host's
// (negative: behind), as last measured.
func (s *Store) ClockOffset() time.Duration {
	return s.clock.now().Sub(s.opts.LocalClock())
}

// refreshClock measures the server's clock every Options.ClockRefresh
// until the Store closes; a failed measurement keeps the last one.
func (s *Store) refreshClock() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.ClockRefresh)
	defer t.Stop()
	for {
		select {
		case <-s.run.Done():
			return
		case <-t.C:
		}
		conn, err := s.pool.Acquire(s.run)
		if err != nil {
			continue
		}
		s.clock.measure(s.run, conn.Conn(), 3) //nolint:errcheck // keeps the last sample
		conn.Release()
	}
}
