// Package backoff holds Hopper's retry delay policies. They are pure
// functions of the attempt number, the previous delay and a random number in
// [0, 1) that the caller supplies, so they are table-tested without time or
// randomness.
//
// A Policy is plain data (JSON-encodable): a durable store keeps a job's own
// policy next to the job.
//
// The default is exponential backoff with full jitter: delay = rnd ×
// min(Max, Base × Factor^(attempt-1)). Full jitter is stateless — it needs
// only the attempt number, not the previous delay — and spreads retries of a
// burst of failures across the whole window, which AWS's analysis of backoff
// strategies found to do the least total work of the jittered schemes (with
// decorrelated jitter close behind). Decorrelated jitter is offered as
// StrategyDecorrelated.
package backoff

import (
	"fmt"
	"math"
	"time"
)

// Strategy selects the formula of a Policy.
type Strategy string

// The strategies.
const (
	// StrategyExponential: Base × Factor^(attempt-1), capped at Max, then
	// jittered per Jitter.
	StrategyExponential Strategy = "exponential"
	// StrategyDecorrelated: min(Max, random between Base and 3 × previous
	// delay) — "decorrelated jitter". The previous delay is the one recorded
	// in the job's attempt history.
	StrategyDecorrelated Strategy = "decorrelated"
	// StrategyFixed: always Base.
	StrategyFixed Strategy = "fixed"
	// StrategyList: Delays[attempt-1]; the last entry repeats.
	StrategyList Strategy = "list"
)

// Jitter selects how an exponential delay is randomised.
type Jitter string

// The jitter kinds.
const (
	JitterNone  Jitter = "none"  // exactly the computed delay
	JitterFull  Jitter = "full"  // uniform in [0, delay)
	JitterEqual Jitter = "equal" // uniform in [delay/2, delay)
)

// Policy computes the delay before a failed job's next attempt. The zero
// value is the default policy: exponential, base 1s, factor 2, max 1h, full
// jitter.
type Policy struct {
	Strategy Strategy        `json:"strategy,omitempty"` // default exponential
	Base     time.Duration   `json:"base,omitempty"`     // default 1s
	Max      time.Duration   `json:"max,omitempty"`      // default 1h; caps every strategy
	Factor   float64         `json:"factor,omitempty"`   // default 2 (exponential only)
	Jitter   Jitter          `json:"jitter,omitempty"`   // default full (exponential only)
	Delays   []time.Duration `json:"delays,omitempty"`   // StrategyList only
}

// Default is the zero Policy with its defaults spelled out.
var Default = Policy{Strategy: StrategyExponential, Base: time.Second, Max: time.Hour, Factor: 2, Jitter: JitterFull}

// Exponential returns exponential backoff from base, capped at max, with full jitter.
func Exponential(base, max time.Duration) Policy {
	return Policy{Strategy: StrategyExponential, Base: base, Max: max, Factor: 2, Jitter: JitterFull}
}

// Decorrelated returns decorrelated-jitter backoff between base and max.
func Decorrelated(base, max time.Duration) Policy {
	return Policy{Strategy: StrategyDecorrelated, Base: base, Max: max}
}

// Fixed returns a policy that always waits d.
func Fixed(d time.Duration) Policy { return Policy{Strategy: StrategyFixed, Base: d, Max: d} }

// List returns a policy that waits delays[0] before the second attempt,
// delays[1] before the third, and so on, repeating the last: List(5s, 30s,
// 300s), say.
func List(delays ...time.Duration) Policy {
	return Policy{Strategy: StrategyList, Delays: delays}
}

// Doubling returns base × 2^attempt with no jitter and no practical cap:
// Doubling(100ms) waits 0.2s, 0.4s, 0.8s, … after attempts 1, 2, 3.
func Doubling(base time.Duration) Policy {
	return Policy{Strategy: StrategyExponential, Base: 2 * base, Max: 1 << 62, Factor: 2, Jitter: JitterNone}
}

func (p Policy) withDefaults() Policy {
	if p.Strategy == "" {
		p.Strategy = StrategyExponential
	}
	if p.Base == 0 && p.Strategy != StrategyList {
		p.Base = time.Second
	}
	if p.Max == 0 {
		p.Max = time.Hour
		if p.Strategy == StrategyFixed && p.Base > p.Max {
			p.Max = p.Base
		}
		for _, d := range p.Delays {
			p.Max = max(p.Max, d)
		}
	}
	if p.Factor == 0 {
		p.Factor = 2
	}
	if p.Jitter == "" {
		p.Jitter = JitterFull
	}
	return p
}

// Error is a policy Validate refuses: the field at fault in the policy's
// JSON names ("base", "delays[2]") and the reason, as fields, so that a
// caller names it without parsing the message.
type Error struct {
	Field  string
	Reason string
}

// Error implements error: "field: reason".
func (e *Error) Error() string { return e.Field + ": " + e.Reason }

func invalid(field, format string, args ...any) error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate reports the first bad field of p, as an *Error.
func (p Policy) Validate() error {
	switch p.Strategy {
	case "", StrategyExponential, StrategyDecorrelated, StrategyFixed:
	case StrategyList:
		if len(p.Delays) == 0 {
			return invalid("delays", "a list policy needs at least one delay")
		}
	default:
		return invalid("strategy", "unknown %q; want exponential, decorrelated, fixed or list", p.Strategy)
	}
	switch p.Jitter {
	case "", JitterNone, JitterFull, JitterEqual:
	default:
		return invalid("jitter", "unknown %q; want none, full or equal", p.Jitter)
	}
	switch {
	case p.Base < 0:
		return invalid("base", "must not be negative, got %s", p.Base)
	case p.Max < 0:
		return invalid("max", "must not be negative, got %s", p.Max)
	case p.Max > 0 && p.Base > p.Max && p.Strategy != StrategyList:
		return invalid("base", "%s is more than max %s", p.Base, p.Max)
	case p.Factor < 0 || (p.Factor > 0 && p.Factor < 1):
		return invalid("factor", "must be at least 1, got %g", p.Factor)
	}
	for i, d := range p.Delays {
		if d < 0 {
			return invalid(fmt.Sprintf("delays[%d]", i), "must not be negative, got %s", d)
		}
		if p.Max > 0 && d > p.Max {
			return invalid(fmt.Sprintf("delays[%d]", i), "%s is more than max %s", d, p.Max)
		}
	}
	return nil
}

// Delay returns the delay before the attempt after failed attempt number
// attempt (1-based). prev is the previous delay (0 for the first retry; only
// the decorrelated strategy reads it) and rnd a uniform random number in
// [0, 1). The result is never negative and never above Max.
func (p Policy) Delay(attempt int, prev time.Duration, rnd float64) time.Duration {
	p = p.withDefaults()
	if attempt < 1 {
		attempt = 1
	}
	var d time.Duration
	switch p.Strategy {
	case StrategyFixed:
		d = p.Base
	case StrategyList:
		i := min(attempt, len(p.Delays)) - 1
		d = p.Delays[i]
	case StrategyDecorrelated:
		hi := 3 * float64(max(prev, p.Base))
		lo := float64(p.Base)
		d = time.Duration(lo + rnd*(hi-lo))
	default:
		exp := float64(p.Base) * math.Pow(p.Factor, float64(attempt-1))
		if exp > float64(p.Max) || math.IsInf(exp, 0) || math.IsNaN(exp) {
			exp = float64(p.Max)
		}
		switch p.Jitter {
		case JitterFull:
			exp *= rnd
		case JitterEqual:
			exp = exp/2 + rnd*exp/2
		}
		d = time.Duration(exp)
	}
	return max(0, min(d, p.Max))
}

// Clone returns a copy of p that shares nothing with it; nil for nil.
func (p *Policy) Clone() *Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.Delays = append([]time.Duration(nil), p.Delays...)
	return &c
}
