package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/internal/jsonerr"
	"github.com/hopperq/hopper/job"
)

// Retry is a retry policy as an object: backoff.Policy's JSON, durations
// as Duration. Base and Max given must be positive (a zero is the
// policy's default); the rest is backoff.Policy.Validate's, which the
// library applies.
type Retry struct {
	Strategy string    `json:"strategy"`
	Base     *Duration `json:"base"`
	Max      *Duration `json:"max"`
	Factor   float64   `json:"factor"`
	Jitter   string    `json:"jitter"`
	// Delays are Durations, read one by one to name the one at fault.
	Delays []json.RawMessage `json:"delays"`
}

// RetryForms lists the compact forms of a retry policy, for help and
// errors.
const RetryForms = "exponential[:BASE[,MAX]] (full jitter; the default is exponential:1s,1h), " +
	"decorrelated[:BASE[,MAX]] (decorrelated jitter, default 1s,1h), fixed:DELAY or list:D1,D2,... (the last repeats)"

// DecodeRetry reads a retry policy for field: an object (Retry) or a
// string in the compact form (ParseRetry).
func DecodeRetry(b []byte, field string) (*backoff.Policy, error) {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, job.Invalid(field, "not a JSON string")
		}
		return ParseRetry(field, s)
	}
	var v Retry
	if err := Decode(b, &v, field+"."); err != nil {
		return nil, err
	}
	p := &backoff.Policy{Strategy: backoff.Strategy(v.Strategy), Factor: v.Factor, Jitter: backoff.Jitter(v.Jitter)}
	for _, d := range []struct {
		name string
		v    *Duration
		to   *time.Duration
	}{{"base", v.Base, &p.Base}, {"max", v.Max, &p.Max}} {
		if d.v == nil {
			continue
		}
		if err := Given(field+"."+d.name, d.v.D() <= 0, "the default", d.v.D()); err != nil {
			return nil, err
		}
		*d.to = d.v.D()
	}
	for i, b := range v.Delays {
		d, err := jsondur.Parse(b)
		if err != nil {
			return nil, job.Invalid(fmt.Sprintf("%s.delays[%d]", field, i), "%s", jsonerr.Describe(err))
		}
		p.Delays = append(p.Delays, d)
	}
	return p, nil
}

// ParseRetry reads the compact form of a retry policy for field:
//
//	exponential[:BASE[,MAX]]   (full jitter; default 1s,1h)
//	decorrelated[:BASE[,MAX]]  (default 1s,1h)
//	fixed:DELAY
//	list:D1,D2,...             (the last repeats)
//
// BASE, MAX and DELAY must be positive (the policy would read a zero as
// its default) and BASE at most MAX.
func ParseRetry(field, s string) (*backoff.Policy, error) {
	bad := func(format string, args ...any) (*backoff.Policy, error) {
		return nil, job.Invalid(field, format, args...)
	}
	if strings.TrimSpace(s) == "" {
		return bad("empty; want %s", RetryForms)
	}
	name, rest, hasArgs := strings.Cut(s, ":")
	var ds []time.Duration
	if hasArgs {
		for _, part := range strings.Split(rest, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(part))
			if err != nil || d < 0 {
				return bad("%q is not a duration such as 5s", part)
			}
			ds = append(ds, d)
		}
	}
	positive := func(what string, d time.Duration) error {
		if d <= 0 {
			return job.Invalid(field, "%s must be positive, got %s", what, d)
		}
		return nil
	}
	var p backoff.Policy
	switch name {
	case "exponential", "decorrelated":
		if len(ds) > 2 {
			return bad("want %s[:BASE[,MAX]]", name)
		}
		base, maxD := time.Second, time.Hour
		if len(ds) > 0 {
			base = ds[0]
		}
		if len(ds) > 1 {
			maxD = ds[1]
		}
		if err := positive("BASE", base); err != nil {
			return nil, err
		}
		if err := positive("MAX", maxD); err != nil {
			return nil, err
		}
		if base > maxD {
			note := ""
			if len(ds) < 2 {
				note = fmt.Sprintf(" (the default MAX; give one: %s:%s,%s)", name, base, 2*base)
			}
			return bad("BASE %s is more than MAX %s%s", base, maxD, note)
		}
		if name == "exponential" {
			p = backoff.Exponential(base, maxD)
		} else {
			p = backoff.Decorrelated(base, maxD)
		}
	case "fixed":
		if len(ds) != 1 {
			return bad("want fixed:DELAY, such as fixed:5s")
		}
		if err := positive("DELAY", ds[0]); err != nil {
			return nil, err
		}
		p = backoff.Fixed(ds[0])
	case "list":
		if len(ds) == 0 {
			return bad("want list:D1,D2,..., such as list:5s,30s,300s")
		}
		p = backoff.List(ds...)
	default:
		return bad("want %s", RetryForms)
	}
	return &p, nil
}

// DescribeRetry is the inverse of ParseRetry, for display; nil is
// "default".
func DescribeRetry(p *backoff.Policy) string {
	if p == nil {
		return "default"
	}
	switch p.Strategy {
	case backoff.StrategyFixed:
		return "fixed:" + p.Base.String()
	case backoff.StrategyList:
		parts := make([]string, len(p.Delays))
		for i, d := range p.Delays {
			parts[i] = d.String()
		}
		return "list:" + strings.Join(parts, ",")
	case backoff.StrategyDecorrelated:
		return fmt.Sprintf("decorrelated:%s,%s", p.Base, p.Max)
	}
	return fmt.Sprintf("exponential:%s,%s", p.Base, p.Max)
}
