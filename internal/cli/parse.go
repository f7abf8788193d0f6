package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// parseID parses a job ID argument.
func parseID(s string) (hopper.ID, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return 0, usagef("bad job ID %q: want a positive number", s)
	}
	return hopper.ID(n), nil
}

func parseIDs(args []string) ([]hopper.ID, error) {
	ids := make([]hopper.ID, 0, len(args))
	for _, a := range args {
		id, err := parseID(a)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// parseAt parses a --at time: RFC 3339, within the range stores keep.
func parseAt(flag, s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}, usagef("bad %s %q: want an RFC 3339 time such as %s", flag, s, time.Now().Add(time.Hour).Truncate(time.Second).Format(time.RFC3339))
	}
	return t, checkRunAt(flag, s, t)
}

// checkRunAt refuses a run time outside the range stores keep (1970 to
// 2200), naming the flag that gave it.
func checkRunAt(flag, value string, t time.Time) error {
	if t.Before(job.MinTime) || t.After(job.MaxTime) {
		return usagef("bad %s %s: %s is outside the supported range %s to %s", flag, value, t.UTC().Format(time.RFC3339),
			job.MinTime.Format(time.DateOnly), job.MaxTime.Format(time.DateOnly))
	}
	return nil
}

// delayTime is now+d for a --delay flag, refused if negative or beyond the
// range stores keep.
func delayTime(flag string, d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, usagef("bad %s %s: must not be negative", flag, d)
	}
	t := time.Now().Add(d)
	return t, checkRunAt(flag, d.String(), t)
}

// parseStates parses a comma-separated list of states; "waiting" stands
// for scheduled, available and retrying, and "finished" for completed,
// cancelled and dead.
func parseStates(s string) ([]hopper.State, error) {
	var out []hopper.State
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "":
		case "waiting":
			out = append(out, job.WaitingStates...)
		case "finished":
			out = append(out, hopper.StateCompleted, hopper.StateCancelled, hopper.StateDead)
		default:
			st, err := job.ParseState(name)
			if err != nil {
				return nil, usagef("--state: unknown state %q; want scheduled, available, running, retrying, completed, cancelled, dead, waiting or finished", strings.TrimSpace(name))
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// backoffForms lists what --retry-backoff takes, for help and errors.
const backoffForms = "exponential[:BASE[,MAX]] (full jitter; the default is exponential:1s,1h), " +
	"decorrelated[:BASE[,MAX]] (decorrelated jitter, default 1s,1h), fixed:DELAY or list:D1,D2,... (the last repeats)"

// parseBackoff parses --retry-backoff:
//
//	exponential[:BASE[,MAX]]   (full jitter; default 1s,1h)
//	decorrelated[:BASE[,MAX]]  (default 1s,1h)
//	fixed:DELAY
//	list:D1,D2,...             (the last repeats)
//
// BASE, MAX and DELAY must be positive (the policy would read a zero as
// its default) and BASE at most MAX.
func parseBackoff(s string) (*backoff.Policy, error) {
	if s == "" {
		return nil, nil
	}
	name, rest, hasArgs := strings.Cut(s, ":")
	var ds []time.Duration
	if hasArgs {
		for _, part := range strings.Split(rest, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(part))
			if err != nil || d < 0 {
				return nil, usagef("bad --retry-backoff %q: %q is not a duration such as 5s", s, part)
			}
			ds = append(ds, d)
		}
	}
	bad := func(want string) error {
		return usagef("bad --retry-backoff %q: want %s", s, want)
	}
	positive := func(what string, d time.Duration) error {
		if d <= 0 {
			return usagef("bad --retry-backoff %q: %s must be positive, got %s", s, what, d)
		}
		return nil
	}
	var p backoff.Policy
	switch name {
	case "exponential", "decorrelated":
		if len(ds) > 2 {
			return nil, bad(name + "[:BASE[,MAX]]")
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
				note = " (the default MAX; give one: " + name + ":" + base.String() + "," + (2 * base).String() + ")"
			}
			return nil, usagef("bad --retry-backoff %q: BASE %s is more than MAX %s%s", s, base, maxD, note)
		}
		if name == "exponential" {
			p = backoff.Exponential(base, maxD)
		} else {
			p = backoff.Decorrelated(base, maxD)
		}
	case "fixed":
		if len(ds) != 1 {
			return nil, bad("fixed:DELAY, such as fixed:5s")
		}
		if err := positive("DELAY", ds[0]); err != nil {
			return nil, err
		}
		p = backoff.Fixed(ds[0])
	case "list":
		if len(ds) == 0 {
			return nil, bad("list:D1,D2,..., such as list:5s,30s,300s")
		}
		p = backoff.List(ds...)
	default:
		return nil, bad(backoffForms)
	}
	if err := p.Validate(); err != nil {
		return nil, usagef("bad --retry-backoff %q: %v", s, err)
	}
	return &p, nil
}

// describeBackoff is the inverse of parseBackoff, for display.
func describeBackoff(p *backoff.Policy) string {
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

// parseQueues parses --queues q1,q2:limit.
func parseQueues(s string) (map[string]hopper.QueueConfig, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := make(map[string]hopper.QueueConfig)
	for _, part := range strings.Split(s, ",") {
		name, lim, hasLim := strings.Cut(strings.TrimSpace(part), ":")
		if name == "" {
			return nil, usagef("bad --queues %q: empty queue name", s)
		}
		var q hopper.QueueConfig
		if hasLim {
			n, err := strconv.Atoi(lim)
			if err != nil || n < 1 {
				return nil, usagef("bad --queues %q: limit of %s must be a positive number", s, name)
			}
			q.MaxWorkers = n
		}
		out[name] = q
	}
	return out, nil
}
