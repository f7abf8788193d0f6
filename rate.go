package hopper

import (
	"time"

	"github.com/hopperq/hopper/store"
)

// Rate is a queue's throttle (Client.SetQueueRate): at most N starts per
// Period across every process sharing the store, up to Burst of them at
// once after a quiet spell. It is enforced by the generic cell rate
// algorithm: the store keeps one time per throttled queue, and the starts
// in any window of length w never exceed Burst + w/(Period/N) — no
// window edge lets twice the rate through. The zero Rate is no throttle.
type Rate struct {
	N      int           // starts per Period (0: no throttle)
	Period time.Duration // between 1ms and 366 days
	// Burst is how many may start at once (0 means 1: starts are spaced
	// Period/N apart).
	Burst int
	// Drop cancels the excess instead of holding it back: a job the rate
	// does not let start when a worker would take it is cancelled with
	// the LastError "dropped: queue NAME over its rate N/PERIOD" (as a
	// rate per key, SetQueueKeyRate: "dropped: key KEY of queue NAME over
	// its rate N/PERIOD"), never run. Without Drop the excess waits,
	// available, and starts as the rate allows.
	Drop bool
}

// String renders r as "N/PERIOD" ("100/1s"), "none" for no throttle; a
// burst or drop is not part of it.
func (r Rate) String() string { return r.store().String() }

// ParseRate reads "N/DURATION" ("100/1s", "5/m", "1/250ms") or "none" as
// a Rate without a burst or drop; a bad form is a *FieldError on "rate".
func ParseRate(s string) (Rate, error) {
	r, err := store.ParseRate("rate", s)
	return rateOf(r), err
}

// Validate returns a *FieldError unless r is the zero Rate or N is
// between 1 and 1,048,576, Period between 1ms and 366 days ("rate"), and
// Burst between 0 and 1,048,576 with Burst × Period/N within 366 days
// ("burst"). SetQueueRate checks it.
func (r Rate) Validate() error { return r.store().Validate() }

func (r Rate) store() store.Rate {
	return store.Rate{N: r.N, Period: r.Period, Burst: r.Burst, Drop: r.Drop}
}

func rateOf(r store.Rate) Rate {
	return Rate{N: r.N, Period: r.Period, Burst: r.Burst, Drop: r.Drop}
}
