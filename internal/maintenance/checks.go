package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// checkChecks evaluates the external checks at now, as checkAll does the
// schedules: a check down (job.Check.Status) without an open check_down
// incident gets one, and an open one is resolved once the check is not
// down (a success ping came, or it was paused). The incidents it handles
// are deleted from openBy. It returns the earliest time a check may go
// down.
func (s *Services) checkChecks(ctx context.Context, checks []*job.Check, openBy map[incidentKey]*job.Incident, now time.Time) time.Time {
	var earliest time.Time
	for _, c := range checks {
		key := incidentKey{job.CheckSubject(c.Name), job.ProblemCheckDown}
		in := openBy[key]
		delete(openBy, key)
		down := c.Status(now) == job.CheckDown
		switch {
		case down && in == nil:
			s.openCheck(ctx, c, &job.Incident{Subject: key.subject, Problem: job.ProblemCheckDown, Detail: c.DownReason(now), OpenedAt: now}, now)
		case !down && in != nil:
			s.resolveCheck(ctx, c, in, now)
		}
		if at := c.DownAt(); !down && !at.IsZero() && (earliest.IsZero() || at.Before(earliest)) {
			earliest = at
		}
	}
	return earliest
}

// checkJobs returns the store's Notify of an incident of check c reaching
// status (down or up) at now.
func (s *Services) checkJobs(chans []*job.Channel, c *job.Check, status string, now time.Time) func(*job.Incident) ([]*job.Job, error) {
	return func(in *job.Incident) ([]*job.Job, error) {
		n := &job.Notification{Event: string(in.Problem), Status: status, Subject: in.Subject, Check: c.Name,
			Incident: in.ID, Detail: in.Detail, At: now}
		if status == job.StatusUp {
			n.Detail = fmt.Sprintf("resolved after %s: %s", in.ResolvedAt.Sub(in.OpenedAt).Round(time.Second), in.Detail)
		}
		return s.notificationJobs(chans, c.Channels, n, now)
	}
}

// openCheck opens in, the incident of check c, with its "down"
// notifications.
func (s *Services) openCheck(ctx context.Context, c *job.Check, in *job.Incident, now time.Time) {
	chans, err := s.channels(ctx)
	if err != nil {
		return
	}
	res, err := s.cfg.Store.OpenIncident(ctx, store.OpenIncidentParams{Incident: in, Notify: s.checkJobs(chans, c, job.StatusDown, now)})
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "open incident", slog.String("check", c.Name), slog.String("error", err.Error()))
		}
		return
	}
	if res.Changed {
		s.log.LogAttrs(ctx, slog.LevelError, "check down", slog.String("check", c.Name), slog.Int64("incident", res.Incident.ID),
			slog.String("detail", in.Detail), slog.Int("notifications", len(res.Jobs)))
		s.notified(res.Jobs)
	}
}

// resolveCheck resolves in, the incident of check c, with its "up"
// notifications.
func (s *Services) resolveCheck(ctx context.Context, c *job.Check, in *job.Incident, now time.Time) {
	chans, err := s.channels(ctx)
	if err != nil {
		return
	}
	res, err := s.cfg.Store.ResolveIncident(ctx, store.ResolveIncidentParams{ID: in.ID, At: now, Notify: s.checkJobs(chans, c, job.StatusUp, now)})
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "resolve incident", slog.String("check", c.Name), slog.Int64("incident", in.ID),
				slog.String("error", err.Error()))
		}
		return
	}
	if res.Changed {
		s.log.LogAttrs(ctx, slog.LevelInfo, "check up", slog.String("check", c.Name), slog.Int64("incident", in.ID),
			slog.Duration("lasted", now.Sub(in.OpenedAt)), slog.Int("notifications", len(res.Jobs)))
		s.notified(res.Jobs)
	}
}
