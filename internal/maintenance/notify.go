package maintenance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// channels reads the notification channels; an error is logged.
func (s *Services) channels(ctx context.Context) ([]*job.Channel, error) {
	chans, err := s.cfg.Store.ListChannels(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.LogAttrs(ctx, slog.LevelError, "list notification channels", slog.String("error", err.Error()))
	}
	return chans, err
}

// notificationJobs returns the jobs that send n to the channels of chans
// that take it, routed by named (a schedule's Monitor.Channels).
func (s *Services) notificationJobs(chans []*job.Channel, named []string, n *job.Notification, now time.Time) ([]*job.Job, error) {
	if s.cfg.NotifyJob == nil {
		return nil, nil
	}
	var jobs []*job.Job
	for _, name := range job.Route(chans, named, n.Event) {
		j, err := s.cfg.NotifyJob(name, n, now)
		if err != nil {
			return nil, fmt.Errorf("notification to channel %q: %w", name, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// incidentJobs returns the store's Notify of an incident of sc reaching
// status (down or up) at now.
func (s *Services) incidentJobs(chans []*job.Channel, sc *job.Schedule, status string, now time.Time) func(*job.Incident) ([]*job.Job, error) {
	var named []string
	if sc.Monitor != nil {
		named = sc.Monitor.Channels
	}
	return func(in *job.Incident) ([]*job.Job, error) {
		n := &job.Notification{Event: string(in.Problem), Status: status, Subject: in.Subject, Schedule: sc.Name,
			Job: in.Job, Incident: in.ID, Detail: in.Detail, At: now}
		if status == job.StatusUp {
			n.Detail = fmt.Sprintf("resolved after %s: %s", in.ResolvedAt.Sub(in.OpenedAt).Round(time.Second), in.Detail)
		}
		return s.notificationJobs(chans, named, n, now)
	}
}

// notified follows notification jobs enqueued.
func (s *Services) notified(ids []job.ID) {
	if len(ids) > 0 && s.cfg.OnNotified != nil {
		s.cfg.OnNotified()
	}
}

// Notify enqueues the notification jobs of n, an event without an
// incident, for the channels that take it: those taking every subject and
// those of the schedule sc (nil: none). Errors are logged.
func (s *Services) Notify(ctx context.Context, sc *job.Schedule, n *job.Notification) {
	now := s.cfg.Now()
	s.enqueue(ctx, s.eventJobs(ctx, sc, n, now), now, n.Event)
}

// eventJobs returns the notification jobs of n, an event without an
// incident, made at now, for the channels that take it (as Notify); an
// error is logged, and no jobs returned.
func (s *Services) eventJobs(ctx context.Context, sc *job.Schedule, n *job.Notification, now time.Time) []*job.Job {
	chans, err := s.channels(ctx)
	if err != nil || len(chans) == 0 {
		return nil
	}
	var named []string
	if sc != nil && sc.Monitor != nil {
		named = sc.Monitor.Channels
	}
	jobs, err := s.notificationJobs(chans, named, n, now)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "notification", slog.String("event", n.Event), slog.String("error", err.Error()))
		return nil
	}
	return jobs
}

// NotifyDead wakes the notifier of dead jobs (NoteDeaths): a job died in
// this process. It never waits (the completer calls it).
func (s *Services) NotifyDead() {
	if s.cfg.NotifyDead {
		signal(s.deadNow)
	}
}

// deadBatch bounds the deaths one store call of NoteDeaths notes.
const deadBatch = 256

// notifier notes the deaths the store has not noted (NoteDeaths) at
// start, when a job died here (NotifyDead), and every MonitorPoll: the
// deaths of another process, and those a process noted nothing of before
// it was killed.
func (s *Services) notifier(ctx context.Context) {
	t := time.NewTicker(s.cfg.MonitorPoll)
	defer t.Stop()
	for {
		s.NoteDeaths(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.deadNow:
		case <-t.C:
		}
	}
}

// NoteDeaths enqueues the notifications of the dead jobs whose death the
// store has not noted (store.Monitoring.PendingDeaths), routed by their
// schedules' monitors, and notes those deaths in the same store step, a
// batch at a time until none is left. The store's outbox makes it exact:
// a death is notified once however many processes note at once, and a
// process killed between a death and its notification leaves the death
// for the next NoteDeaths of any process. Notification jobs themselves
// (kind NotifyKind) are noted without a notification. Errors are logged.
func (s *Services) NoteDeaths(ctx context.Context) {
	for {
		dead, err := s.cfg.Store.PendingDeaths(ctx, deadBatch)
		if err != nil {
			if ctx.Err() == nil {
				s.log.LogAttrs(ctx, slog.LevelError, "dead-job notifications: read the dead jobs", slog.String("error", err.Error()))
			}
			return
		}
		if len(dead) == 0 {
			return
		}
		chans, err := s.channels(ctx)
		if err != nil {
			return
		}
		named, err := s.monitorChannels(ctx, dead)
		if err != nil {
			return
		}
		now := s.cfg.Now()
		res, err := s.cfg.Store.NoteDeaths(ctx, store.NoteDeathsParams{Deaths: dead, Notify: func(j *job.Job) ([]*job.Job, error) {
			return s.deathJobs(ctx, chans, named[j.Schedule], j, now), nil
		}})
		if err != nil {
			if ctx.Err() == nil {
				s.log.LogAttrs(ctx, slog.LevelError, "enqueue notifications", slog.String("event", job.NotifyJobDead), slog.String("error", err.Error()))
			}
			return
		}
		s.notified(res.Jobs)
		if len(dead) < deadBatch {
			return
		}
	}
}

// monitorChannels returns the channels the monitors of the schedules of
// dead name (Monitor.Channels), by schedule.
func (s *Services) monitorChannels(ctx context.Context, dead []*job.Job) (map[string][]string, error) {
	named := map[string][]string{}
	for _, j := range dead {
		if _, ok := named[j.Schedule]; ok || j.Schedule == "" {
			continue
		}
		sc, err := s.cfg.Store.GetSchedule(ctx, j.Schedule)
		switch {
		case err == nil && sc.Monitor != nil:
			named[j.Schedule] = sc.Monitor.Channels
		case err == nil || errors.Is(err, job.ErrNotFound):
			named[j.Schedule] = nil
		default:
			if ctx.Err() == nil {
				s.log.LogAttrs(ctx, slog.LevelError, "dead-job notifications: read a schedule", slog.String("error", err.Error()))
			}
			return nil, err
		}
	}
	return named, nil
}

// deathJobs returns the notification jobs of the death of j, made at now,
// for the channels of chans taking it (named: those its schedule's monitor
// names); none for a notification job. A job that cannot be made is
// logged and left out: the death is noted all the same, so that one bad
// job does not hold the outbox.
func (s *Services) deathJobs(ctx context.Context, chans []*job.Channel, named []string, j *job.Job, now time.Time) []*job.Job {
	if j.Kind == s.cfg.NotifyKind {
		return nil
	}
	n := &job.Notification{Event: job.NotifyJobDead, Status: job.StatusEvent, Schedule: j.Schedule, Job: j.ID, At: cmp.Or(j.FinishedAt, now),
		Detail: fmt.Sprintf("job %d (%s, queue %s) is dead after %d attempts: %s", j.ID, j.Kind, j.Queue, j.Attempt, j.LastError)}
	if j.Schedule != "" {
		n.Subject = job.ScheduleSubject(j.Schedule)
	}
	jobs, err := s.notificationJobs(chans, named, n, now)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "dead-job notification", slog.Int64("job", int64(j.ID)), slog.String("error", err.Error()))
		return nil
	}
	return jobs
}

// enqueue stores notification jobs made at now, for event, and logs a
// failure.
func (s *Services) enqueue(ctx context.Context, jobs []*job.Job, now time.Time, event string) {
	if len(jobs) == 0 {
		return
	}
	res, err := s.cfg.Store.Enqueue(ctx, store.EnqueueParams{Now: now, Jobs: jobs})
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "enqueue notifications", slog.String("event", event), slog.String("error", err.Error()))
		}
		return
	}
	ids := make([]job.ID, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	s.notified(ids)
}

// catchUpCapJobs returns the jobs that notify that sc's catch-up at now
// left dropped ticks over its cap (eventJobs).
func (s *Services) catchUpCapJobs(ctx context.Context, sc *job.Schedule, dropped, cap int, now time.Time) []*job.Job {
	return s.eventJobs(ctx, sc, &job.Notification{Event: job.NotifyCatchUpCap, Status: job.StatusEvent, Subject: job.ScheduleSubject(sc.Name),
		Schedule: sc.Name, At: now, Detail: fmt.Sprintf("catch-up ran the latest %d missed ticks; %d older ones over the cap were not run", cap, dropped)}, now)
}
