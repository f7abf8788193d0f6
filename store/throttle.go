package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
)

// Rate is a queue's throttle (QueueState.Rate): at most N starts per
// Period, of which up to Burst at once, by the generic cell rate algorithm
// (GCRA). The state of a throttled queue is one time, its theoretical
// arrival time (TAT): the time its starts so far would end if they were
// spaced one Interval apart. A start at now is allowed when it keeps the
// TAT within Burst intervals of now, and moves the TAT one Interval on
// from the later of the TAT and now. The bound is exact over any sliding
// window: in any window of length w there are at most
// Burst + floor(w/Interval) starts (Bound), never twice the rate around a
// window's edge as fixed windows allow; and a backlog is started at the
// rate, one Interval apart after the burst.
//
// The zero Rate (N = 0) is no throttle. The state is keyed by (queue,
// key), the empty key being the queue's own; a queue's KeyRate throttles
// each of its keys with a state of its own (decision 98).
type Rate struct {
	N      int           // starts per Period (0: no throttle)
	Period time.Duration // the period N is counted over
	// Burst is how many starts may happen at once after a quiet spell
	// (0 means 1: starts are spaced one Interval apart).
	Burst int
	// Drop makes the queue drop its excess instead of holding it: the
	// ready jobs a claim would take but for the rate are cancelled with
	// the reason DropReason, not run (ClaimResult.Dropped); a keyed
	// queue's, over its walk of the keys (RateSplit). On a queue's
	// KeyRate it drops each key's excess (KeyDropReason, KeyWalk). A
	// throttle without Drop never drops a job: the excess waits,
	// available.
	Drop bool
}

// Limits of a Rate (Validate).
const (
	MaxRateN     = 1 << 20
	MaxBurst     = 1 << 20
	MinPeriod    = time.Millisecond
	MaxPeriod    = 366 * 24 * time.Hour
	maxTolerance = int64(MaxPeriod) // Burst × Interval
)

// Zero reports whether r is no throttle.
func (r Rate) Zero() bool { return r.N == 0 }

// Interval is the time between two starts at the steady rate, in
// nanoseconds: Period / N, rounded up, so that the rate never exceeds N
// per Period.
func (r Rate) Interval() int64 {
	if r.N <= 0 {
		return 0
	}
	p := int64(r.Period)
	return (p + int64(r.N) - 1) / int64(r.N)
}

// burst is Burst with 0 read as 1.
func (r Rate) burst() int64 { return int64(max(r.Burst, 1)) }

// Normalized returns r with Burst 0 read as 1 and, for no throttle, every
// field zero: the form every store keeps.
func (r Rate) Normalized() Rate {
	if r.N == 0 {
		return Rate{}
	}
	r.Burst = int(r.burst())
	return r
}

// Validate returns a *job.FieldError unless r is zero or has N between 1
// and MaxRateN ("rate"), Period between MinPeriod and MaxPeriod ("rate"),
// and Burst between 0 and MaxBurst with Burst × Interval within MaxPeriod
// ("burst").
func (r Rate) Validate() error { return r.validate("rate", "burst") }

// ValidateKey is Validate for a queue's rate per key (QueueState.KeyRate),
// its errors on "key_rate" and "key_burst" (Drop is allowed: it drops
// each key's excess).
func (r Rate) ValidateKey() error { return r.validate("key_rate", "key_burst") }

// validate is Validate with its errors on the fields given.
func (r Rate) validate(rateField, burstField string) error {
	if r == (Rate{}) {
		return nil
	}
	switch {
	case r.N < 1 || r.N > MaxRateN:
		return job.Invalid(rateField, "must allow between 1 and %d starts per period, got %d", MaxRateN, r.N)
	case r.Period < MinPeriod || r.Period > MaxPeriod:
		return job.Invalid(rateField, "period must be between %v and %v, got %v", MinPeriod, MaxPeriod, r.Period)
	case r.Burst < 0 || r.Burst > MaxBurst:
		return job.Invalid(burstField, "must be between 0 and %d, got %d", MaxBurst, r.Burst)
	case r.burst()*r.Interval() > maxTolerance:
		return job.Invalid(burstField, "a burst of %d at %s spans more than %v", r.Burst, r, MaxPeriod)
	}
	return nil
}

// String renders r as "N/PERIOD" (with ParseRate's units: "100/1s",
// "5/1m"), "none" for no throttle.
func (r Rate) String() string {
	if r.N == 0 {
		return "none"
	}
	return strconv.Itoa(r.N) + "/" + FormatPeriod(r.Period)
}

// FormatPeriod renders d in the largest of the units h, m, s, ms, us and
// ns that divides it ("1s", "90s", "250ms"); the SQL stores write the same
// text (DropReason) with the same rule.
func FormatPeriod(d time.Duration) string {
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// ParseRate reads "N/DURATION" ("100/1s", "5/1m", "10/s" for "10/1s") or
// "none" (the zero Rate) as a Rate without a burst; a bad form is a
// *job.FieldError on field.
//
// A text longer than MaxRateText bytes is refused (its error would quote
// it).
func ParseRate(field, s string) (Rate, error) {
	if len(s) > MaxRateText {
		return Rate{}, job.Invalid(field, "%d bytes, longer than the limit of %d (a rate is N/DURATION, like 100/1s)", len(s), MaxRateText)
	}
	s = strings.TrimSpace(s)
	if s == "none" || s == "" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, job.Invalid(field, "must be N/DURATION (like 100/1s) or none, got %q", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil {
		return Rate{}, job.Invalid(field, "must be N/DURATION (like 100/1s) or none, got %q", s)
	}
	per = strings.TrimSpace(per)
	if per != "" && (per[0] < '0' || per[0] > '9') {
		per = "1" + per
	}
	d, err := time.ParseDuration(per)
	if err != nil {
		return Rate{}, job.Invalid(field, "bad period in %q: %v", s, err)
	}
	r := Rate{N: count, Period: d}
	if r.N == 0 {
		return Rate{}, job.Invalid(field, "must allow at least 1 start per period (or be none), got %q", s)
	}
	return r, r.validate(field, "burst") // (no burst yet: only field's errors)
}

// DropReason is the LastError of a job a claim dropped because its queue
// was over its rate (Rate.Drop).
func DropReason(queue string, r Rate) string {
	return fmt.Sprintf("dropped: queue %s over its rate %s", queue, r)
}

// KeyDropReason is the LastError of a job of key a claim dropped because
// the key was over its queue's rate per key r (Rate.Drop on
// QueueState.KeyRate): "dropped: key tenant=42 of queue api over its rate
// 1/1m".
func KeyDropReason(queue, key string, r Rate) string {
	return fmt.Sprintf("dropped: key %s of queue %s over its rate %s", key, queue, r)
}

// Throttle is the GCRA state of one throttled queue, or of one key of a
// queue with a KeyRate: its Rate and its theoretical arrival time, in Unix
// nanoseconds (0: no start yet).
type Throttle struct {
	Rate Rate
	TAT  int64
}

// Free returns how many starts the throttle allows at now (Unix
// nanoseconds), at most want.
func (t Throttle) Free(now int64, want int) int {
	iv := t.Rate.Interval()
	if iv == 0 {
		return want
	}
	n := (now + t.Rate.burst()*iv - max(t.TAT, now)) / iv
	return int(max(min(n, int64(want)), 0))
}

// Take returns the state after n starts at now, n at most Free(now, n).
func (t Throttle) Take(now int64, n int) Throttle {
	if n > 0 {
		t.TAT = max(t.TAT, now) + int64(n)*t.Rate.Interval()
	}
	return t
}

// Next returns the earliest time (Unix nanoseconds) at which the throttle
// allows a start: at or before now if Free(now, 1) is 1.
func (t Throttle) Next() int64 {
	return t.TAT - (t.Rate.burst()-1)*t.Rate.Interval()
}

// Until returns when the throttle next allows a start, if that is after
// now; zero if it allows one at now.
func (t Throttle) Until(now time.Time) time.Time {
	if t.Rate.Zero() {
		return time.Time{}
	}
	if next := t.Next(); next > UnixNanos(now) {
		return FromUnixNanos(next)
	}
	return time.Time{}
}

// Collectable reports whether a key's throttle state may be forgotten at
// now (Unix nanoseconds): its TAT is more than a Period behind now. A
// forgotten state is TAT 0, which allows what a TAT at or before now
// allows (a full burst), so forgetting changes no claim; waiting a Period
// past the TAT keeps the rows of keys that start steadily from being
// deleted and written again. Stores collect such rows by the claims of
// their queue (decision 98): a key idle since its TAT passed loses its row
// within a Period and the time to its queue's next claim.
func (t Throttle) Collectable(now int64) bool {
	return t.TAT < now-int64(t.Rate.Period)
}

// Bound is the most starts the rate allows in any closed window of
// length w: Burst + floor(w / Interval) — the bound a conformance test
// checks every window against.
func (r Rate) Bound(w time.Duration) int {
	return int(r.burst() + int64(w)/r.Interval())
}

// MaxRateText bounds the text ParseRate reads.
const MaxRateText = 64
