package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsondur"
)

// scheduleView is a schedule as schedule add and list show it: its times
// in its own zone, the last job's outcome, and the timeout of the jobs it
// fires.
type scheduleView struct {
	sc  *hopper.Schedule
	loc *time.Location
	// last is the last job fired, nil if none or purged (lastGone).
	last     *hopper.Job
	lastGone bool
	// incidents, for schedule get, are its open incidents.
	incidents []*hopper.Incident
}

func newScheduleView(sc *hopper.Schedule) *scheduleView {
	return &scheduleView{sc: sc, loc: scheduleZone(sc)}
}

// scheduleZone is the zone a schedule's times are shown in: a cron rule's
// own (--tz, a CRON_TZ= prefix, else UTC); local time for intervals, which
// have none.
func scheduleZone(sc *hopper.Schedule) *time.Location {
	if sc.FixedDelay || strings.HasPrefix(strings.TrimSpace(sc.Spec), "@every") {
		return time.Local
	}
	r, _, err := sc.Rule()
	if err != nil || r == nil {
		return time.UTC
	}
	if t := r.Next(time.Now()); !t.IsZero() {
		return t.Location()
	}
	return time.UTC
}

// addLastJob looks up the schedule's last job.
func (v *scheduleView) addLastJob(ctx context.Context, s *session) error {
	if v.sc.LastJobID == 0 {
		return nil
	}
	j, err := s.Get(ctx, v.sc.LastJobID)
	switch {
	case errors.Is(err, hopper.ErrNotFound):
		v.lastGone = true
	case err != nil:
		return err
	default:
		v.last = j
	}
	return nil
}

// lastError is a short form of the last job's error, when it failed (is
// waiting to retry), died or was cancelled after a failure.
func (v *scheduleView) lastError() string {
	if v.last == nil || v.last.State == hopper.StateCompleted || v.last.LastError == "" {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(v.last.LastError), "\n")
	return truncate(line, 120)
}

// lastJobText is the LAST JOB column: "12 completed", "13 dead: exit code 3".
func (v *scheduleView) lastJobText() string {
	switch {
	case v.sc.LastJobID == 0:
		return "-"
	case v.lastGone:
		return fmt.Sprintf("%d (purged)", v.sc.LastJobID)
	}
	s := fmt.Sprintf("%d %s", v.last.ID, v.last.State)
	if e := v.lastError(); e != "" {
		s += ": " + truncate(e, 50)
	}
	return s
}

// timeouts returns the range of timeouts the next jobs sc fires get when it
// sets none itself (and hopper serve sets no default): the period, the time
// from a tick to the next, at least hopper.MinScheduledTimeout. For a cron
// rule whose period varies, it looks at the next 24 ticks.
func timeouts(sc *hopper.Schedule) (lo, hi time.Duration) {
	r, delay, err := sc.Rule()
	if err != nil {
		return 0, 0
	}
	if r == nil {
		lo = max(delay, hopper.MinScheduledTimeout)
		return lo, lo
	}
	t := sc.NextRunAt
	if t.IsZero() {
		t = r.Next(time.Now())
	}
	for range 24 {
		next := r.Next(t)
		if next.IsZero() {
			break
		}
		p := max(next.Sub(t), hopper.MinScheduledTimeout)
		if lo == 0 || p < lo {
			lo = p
		}
		hi = max(hi, p)
		t = next
	}
	return lo, hi
}

// jobTimeout is the timeout of the next job sc fires: its own, else the
// period from its next tick to the one after (at least
// hopper.MinScheduledTimeout).
func jobTimeout(sc *hopper.Schedule) time.Duration {
	if sc.Timeout != 0 {
		return sc.Timeout // hopper.NoTimeout: none
	}
	r, delay, err := sc.Rule()
	switch {
	case err != nil:
		return 0
	case r == nil:
		return max(delay, hopper.MinScheduledTimeout)
	}
	t := sc.NextRunAt
	if t.IsZero() {
		t = r.Next(time.Now())
	}
	next := r.Next(t)
	if next.IsZero() {
		return 0
	}
	return max(next.Sub(t), hopper.MinScheduledTimeout)
}

// describeTimeout says what timeout the jobs sc fires get.
func describeTimeout(sc *hopper.Schedule) string {
	if sc.Timeout == hopper.NoTimeout {
		return "each job it fires runs without a timeout (--timeout 0)"
	}
	if sc.Timeout > 0 {
		return fmt.Sprintf("each job it fires times out after %s (--timeout)", sc.Timeout)
	}
	lo, hi := timeouts(sc)
	d := roughDuration(lo)
	if hi != lo {
		d = "between " + roughDuration(lo) + " and " + roughDuration(hi)
	}
	return fmt.Sprintf("no --timeout given: each job it fires times out after %s (the schedule's period: the time to its next tick, but at least %s)",
		d, roughDuration(hopper.MinScheduledTimeout))
}

// MarshalJSON writes the schedule's JSON with its times in its zone, then
// last_job_state, last_job_error, job_timeout, output_kept (its output
// retention with the defaults applied) and, for schedule get,
// open_incidents.
func (v *scheduleView) MarshalJSON() ([]byte, error) {
	sc := *v.sc
	for _, t := range []*time.Time{&sc.NextRunAt, &sc.LastFireAt, &sc.LastSkipAt, &sc.CreatedAt} {
		if !t.IsZero() {
			*t = t.In(v.loc)
		}
	}
	b, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	extra := struct {
		LastJobState string             `json:"last_job_state,omitempty"`
		LastJobError string             `json:"last_job_error,omitempty"`
		JobTimeout   jsondur.Duration   `json:"job_timeout"`
		OutputKept   outputKept         `json:"output_kept"`
		Incidents    []*hopper.Incident `json:"open_incidents,omitempty"`
	}{LastJobError: v.lastError(), JobTimeout: jsondur.Duration(jobTimeout(v.sc)), OutputKept: keptOf(v.sc), Incidents: v.incidents}
	switch {
	case v.last != nil:
		extra.LastJobState = v.last.State.String()
	case v.lastGone:
		extra.LastJobState = "purged"
	}
	e, err := json.Marshal(extra)
	if err != nil {
		return nil, err
	}
	// Join the two objects: {...} + {...} → {..., ...}.
	b = bytes.TrimSuffix(bytes.TrimSpace(b), []byte("}"))
	if len(b) > 1 {
		b = append(b, ',')
	}
	return append(b, e[1:]...), nil
}

// outputKept is a schedule's output retention with its defaults applied,
// as the CLI's JSON shows it: counts from 0 (none kept), max_age a Go
// duration, "0s" for no limit.
type outputKept struct {
	Succeeded int              `json:"succeeded"`
	Failed    int              `json:"failed"`
	MaxAge    jsondur.Duration `json:"max_age"`
}

// keptOf returns the outputs sc keeps.
func keptOf(sc *hopper.Schedule) outputKept {
	r := sc.OutputRetention.Resolved()
	return outputKept{r.Succeeded, r.Failed, jsondur.Duration(r.MaxAge)}
}
