package maintenance

import (
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/schedule"
)

// Rule returns the rule that says when sc fires. Fixed-rate intervals
// ("@every D") are anchored at the schedule's creation, so a schedule made at
// 10:00:07 with "@every 1m" fires at 10:01:07, 10:02:07, … whatever else
// happens. For a fixed-delay schedule, Rule returns nil and the delay: its
// next run is counted from the completion of the previous one.
func Rule(sc *job.Schedule) (schedule.Rule, time.Duration, error) {
	loc := time.UTC
	if sc.TimeZone != "" {
		l, err := time.LoadLocation(sc.TimeZone)
		if err != nil {
			return nil, 0, job.Invalid("time_zone", "unknown time zone %q", sc.TimeZone)
		}
		loc = l
	}
	spec := strings.TrimSpace(sc.Spec)
	if sc.FixedDelay {
		d, err := time.ParseDuration(strings.TrimPrefix(spec, "@every "))
		if err != nil || d < time.Second {
			return nil, 0, job.Invalid("spec", "fixed delay %q: want a duration of at least 1s, such as 30s or 5m", sc.Spec)
		}
		return nil, d, nil
	}
	if rest, ok := strings.CutPrefix(spec, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, 0, job.Invalid("spec", "interval %q: %v", rest, err)
		}
		r, err := schedule.Every(d, sc.CreatedAt)
		if err != nil {
			return nil, 0, job.Invalid("spec", "%v", err)
		}
		return r, 0, nil
	}
	r, err := schedule.Parse(spec, loc)
	if err != nil {
		return nil, 0, job.Invalid("spec", "%v", err)
	}
	return r, 0, nil
}

// FirstRun returns the first fire time of a new schedule created at now.
func FirstRun(sc *job.Schedule, now time.Time) (time.Time, error) {
	r, delay, err := Rule(sc)
	if err != nil {
		return time.Time{}, err
	}
	if r == nil {
		return now.Add(delay), nil
	}
	next := r.Next(now)
	if next.IsZero() {
		return time.Time{}, job.Invalid("spec", "%q never fires", sc.Spec)
	}
	return next, nil
}

// describe is used in log lines.
func describe(sc *job.Schedule) string {
	if sc.FixedDelay {
		return fmt.Sprintf("%s (fixed delay)", sc.Spec)
	}
	return sc.Spec
}
