package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// WakeMonitor makes the monitor evaluate the schedules now.
func (s *Services) WakeMonitor() { signal(s.monitorNow) }

// openLimit bounds the open incidents one pass reads.
const openLimit = 100_000

// finding is what the monitor found of one problem of a schedule: down
// (the problem holds), up (it has ended; for failures, a run completed
// since), the job concerned and a line for people.
type finding struct {
	problem  job.Problem
	down, up bool
	job      job.ID
	detail   string
}

// CheckMonitors evaluates every monitored schedule and every external
// check at now: it opens an incident for each problem found that has none
// open, and resolves the open incidents whose problem ended (or whose
// schedule or check is gone or no longer watches it), each with its
// notification jobs in the same store step. It returns the earliest time
// a problem may start (zero if none).
func (s *Services) CheckMonitors(ctx context.Context, now time.Time) time.Time {
	scheds, err := s.cfg.Store.ListSchedules(ctx)
	if err == nil {
		var checks []*job.Check
		checks, err = s.cfg.Store.ListChecks(ctx)
		if err == nil {
			var open []*job.Incident
			open, err = s.cfg.Store.ListIncidents(ctx, store.ListIncidentsParams{OpenOnly: true, Limit: openLimit})
			if err == nil {
				return s.checkAll(ctx, scheds, checks, open, now)
			}
		}
	}
	if ctx.Err() == nil {
		s.log.LogAttrs(ctx, slog.LevelError, "schedule monitor", slog.String("error", err.Error()))
	}
	return time.Time{}
}

type incidentKey struct {
	subject string
	problem job.Problem
}

func (s *Services) checkAll(ctx context.Context, scheds []*job.Schedule, checks []*job.Check, open []*job.Incident, now time.Time) time.Time {
	openBy := make(map[incidentKey]*job.Incident, len(open))
	for _, in := range open {
		openBy[incidentKey{in.Subject, in.Problem}] = in
	}
	var earliest time.Time
	for _, sc := range scheds {
		if !sc.Monitor.Active() {
			continue
		}
		subject := job.ScheduleSubject(sc.Name)
		found, next, err := s.evaluate(ctx, sc, now)
		if err != nil {
			if ctx.Err() != nil {
				return time.Time{}
			}
			s.log.LogAttrs(ctx, slog.LevelError, "schedule monitor", slog.String("schedule", sc.Name), slog.String("error", err.Error()))
			for key := range openBy { // left as they are until the next pass
				if key.subject == subject {
					delete(openBy, key)
				}
			}
			continue
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
		for _, f := range found {
			key := incidentKey{subject, f.problem}
			in := openBy[key]
			delete(openBy, key)
			switch {
			case f.down && in == nil:
				s.open(ctx, sc, &job.Incident{Subject: subject, Problem: f.problem, Job: f.job, Detail: f.detail, OpenedAt: now}, now)
			case f.up && in != nil:
				s.resolve(ctx, sc, in, now)
			}
		}
	}
	if next := s.checkChecks(ctx, checks, openBy, now); !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
		earliest = next
	}
	// What is left open has no problem watched any more: its schedule or
	// check was removed, or its monitor changed.
	for _, in := range openBy {
		if name, ok := job.ScheduleOfSubject(in.Subject); ok {
			s.resolve(ctx, &job.Schedule{Name: name, Monitor: s.monitorOf(ctx, scheds, name)}, in, now)
		}
		if name, ok := job.CheckOfSubject(in.Subject); ok {
			s.resolveCheck(ctx, &job.Check{Name: name}, in, now)
		}
	}
	return earliest
}

// monitorOf returns the monitor of the schedule name among scheds, if any.
func (s *Services) monitorOf(ctx context.Context, scheds []*job.Schedule, name string) *job.Monitor {
	for _, sc := range scheds {
		if sc.Name == name {
			return sc.Monitor
		}
	}
	return nil
}

// evaluate returns what sc's monitor finds at now, from the store's state,
// and the earliest time a problem not found yet may start.
func (s *Services) evaluate(ctx context.Context, sc *job.Schedule, now time.Time) ([]finding, time.Time, error) {
	m := sc.Monitor
	var next time.Time
	deadline := func(t time.Time) bool { // whether t has passed; else note it
		if !now.Before(t) {
			return true
		}
		if next.IsZero() || t.Before(next) {
			next = t
		}
		return false
	}
	var last *job.Job
	if sc.LastJobID != 0 {
		j, err := s.cfg.Store.Get(ctx, sc.LastJobID)
		switch {
		case errors.Is(err, job.ErrNotFound): // purged
		case err != nil:
			return nil, time.Time{}, err
		default:
			last = j
		}
	}
	var found []finding
	if m.StartGrace > 0 {
		f := finding{problem: job.ProblemMissedStart}
		if !sc.Paused && !sc.NextRunAt.IsZero() && deadline(sc.NextRunAt.Add(m.StartGrace)) {
			f.down, f.detail = true, fmt.Sprintf("the tick of %s did not fire within %s", sc.NextRunAt.UTC().Format(time.RFC3339), m.StartGrace)
		}
		if last != nil && !f.down && !last.FireTime.IsZero() && last.Attempt == 0 &&
			(last.State == job.StateAvailable || last.State == job.StateScheduled) && deadline(last.RunAt.Add(m.StartGrace)) {
			f.down, f.job = true, last.ID
			f.detail = fmt.Sprintf("job %d of the tick of %s did not start within %s", last.ID, last.FireTime.UTC().Format(time.RFC3339), m.StartGrace)
		}
		f.up = !f.down
		found = append(found, f)
	}
	if m.MaxDuration > 0 {
		f := finding{problem: job.ProblemOverDuration}
		if last != nil && last.State == job.StateRunning && deadline(last.StartedAt.Add(m.MaxDuration)) {
			f.down, f.job = true, last.ID
			f.detail = fmt.Sprintf("job %d has been running for over %s (since %s)", last.ID, m.MaxDuration, last.StartedAt.UTC().Format(time.RFC3339))
		}
		f.up = !f.down
		found = append(found, f)
	}
	if k := m.AlertAfterFailures; k > 0 {
		runs, err := s.cfg.Store.LastRuns(ctx, store.LastRunsParams{Schedule: sc.Name, Limit: k})
		if err != nil {
			return nil, time.Time{}, err
		}
		f := finding{problem: job.ProblemFailing}
		dead := 0
		for _, r := range runs {
			if r.State == job.StateDead {
				dead++
			}
		}
		if len(runs) == k && dead == k {
			f.down, f.job = true, runs[0].ID
			f.detail = fmt.Sprintf("the last %d runs ended dead; the latest, job %d: %s", k, runs[0].ID, runs[0].LastError)
		}
		f.up = len(runs) > 0 && runs[0].State == job.StateCompleted
		found = append(found, f)
	}
	return found, next, nil
}

// open opens in, an incident of sc, with its "down" notifications, and
// pauses sc if its monitor says so for failures.
func (s *Services) open(ctx context.Context, sc *job.Schedule, in *job.Incident, now time.Time) {
	chans, err := s.channels(ctx)
	if err != nil {
		return
	}
	p := store.OpenIncidentParams{Incident: in, Notify: s.incidentJobs(chans, sc, job.StatusDown, now)}
	if in.Problem == job.ProblemFailing && sc.Monitor.PauseOnFailures {
		p.Pause = sc.Name
	}
	res, err := s.cfg.Store.OpenIncident(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "open incident", slog.String("schedule", sc.Name),
				slog.String("problem", string(in.Problem)), slog.String("error", err.Error()))
		}
		return
	}
	if !res.Changed {
		return
	}
	attrs := []slog.Attr{slog.String("schedule", sc.Name), slog.String("problem", string(in.Problem)),
		slog.Int64("incident", res.Incident.ID), slog.String("detail", in.Detail), slog.Int("notifications", len(res.Jobs))}
	if p.Pause != "" {
		attrs = append(attrs, slog.Bool("paused", true))
	}
	s.log.LogAttrs(ctx, slog.LevelError, "schedule incident opened", attrs...)
	s.notified(res.Jobs)
}

// resolve resolves in, an incident of sc, with its "up" notifications.
func (s *Services) resolve(ctx context.Context, sc *job.Schedule, in *job.Incident, now time.Time) {
	chans, err := s.channels(ctx)
	if err != nil {
		return
	}
	res, err := s.cfg.Store.ResolveIncident(ctx, store.ResolveIncidentParams{ID: in.ID, At: now, Notify: s.incidentJobs(chans, sc, job.StatusUp, now)})
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "resolve incident", slog.String("schedule", sc.Name),
				slog.Int64("incident", in.ID), slog.String("error", err.Error()))
		}
		return
	}
	if res.Changed {
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule incident resolved", slog.String("schedule", sc.Name),
			slog.String("problem", string(in.Problem)), slog.Int64("incident", in.ID),
			slog.Duration("lasted", now.Sub(in.OpenedAt)), slog.Int("notifications", len(res.Jobs)))
		s.notified(res.Jobs)
	}
}
