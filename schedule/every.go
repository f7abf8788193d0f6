package schedule

import (
	"fmt"
	"math/bits"
	"time"
)

// everyRule fires at anchor + k*d for every integer k.
type everyRule struct {
	d      time.Duration
	anchor time.Time
	prefix string // "CRON_TZ=name " if the spec had one
}

// MinInterval is the shortest interval of an "@every" rule, a fixed-rate
// or a fixed-delay schedule: a job a second is the finest a schedule fires.
const MinInterval = time.Second

// CheckInterval returns an error unless d is at least MinInterval: the one
// check of every interval (Every, Parse's "@every", hopper.AddSchedule's
// Every and a fixed delay).
func CheckInterval(d time.Duration) error {
	if d < MinInterval {
		return fmt.Errorf("interval %v is below the %v minimum", d, MinInterval)
	}
	return nil
}

// Every returns a fixed-rate rule firing every d (d >= 1s), anchored so that
// the fire times are anchor + k*d for every integer k (including negative
// ones, so the anchor fixes the phase, not a start); Next(t) returns the
// smallest anchor + k*d strictly after t, so missed ticks are skipped, never
// replayed, and the cadence is kept. With a zero anchor the Unix epoch in
// UTC is used. The rule is a pure duration, unaffected by daylight saving
// time; Next returns times in the anchor's location. String returns
// "@every " followed by d; it does not encode the anchor. Every returns an
// error if d is below one second.
func Every(d time.Duration, anchor time.Time) (Rule, error) {
	if err := CheckInterval(d); err != nil {
		return nil, fmt.Errorf("schedule: every: %w", err)
	}
	if anchor.IsZero() {
		anchor = time.Unix(0, 0).UTC()
	}
	return &everyRule{d: d, anchor: anchor.Round(0)}, nil
}

// String returns "@every " followed by the interval, e.g. "@every 1m30s".
func (e *everyRule) String() string { return e.prefix + "@every " + e.d.String() }

// Next returns the smallest anchor + k*d strictly after t, in the anchor's
// location, or the zero Time if that is beyond the range of time.Time.
func (e *everyRule) Next(t time.Time) time.Time {
	d := uint64(e.d)
	// (t - anchor) mod d, computed without overflowing for any t.
	r := (modNanos(t, d) + d - modNanos(e.anchor, d)) % d
	next := t.Round(0).Add(time.Duration(d - r)).In(e.anchor.Location())
	if !next.After(t) {
		return time.Time{}
	}
	return next
}

// modNanos returns t's nanoseconds since the Unix epoch, modulo d (d > 0),
// using 128-bit arithmetic.
func modNanos(t time.Time, d uint64) uint64 {
	sec := t.Unix()
	abs := uint64(sec)
	if sec < 0 {
		abs = -abs
	}
	hi, lo := bits.Mul64(abs, uint64(time.Second))
	r := bits.Rem64(hi, lo, d)
	if sec < 0 {
		r = (d - r) % d
	}
	return (r + uint64(t.Nanosecond())%d) % d
}
