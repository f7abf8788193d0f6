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

// deadQueue bounds the dead jobs waiting for their notifications; more
// are dropped, and a warning says how many.
const deadQueue = 1024

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
	chans, err := s.channels(ctx)
	if err != nil || len(chans) == 0 {
		return
	}
	var named []string
	if sc != nil && sc.Monitor != nil {
		named = sc.Monitor.Channels
	}
	now := s.cfg.Now()
	jobs, err := s.notificationJobs(chans, named, n, now)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "notification", slog.String("event", n.Event), slog.String("error", err.Error()))
		return
	}
	s.enqueue(ctx, jobs, now, n.Event)
}

// NotifyDead queues the notification of a dead job, which the notifier
// loop enqueues: it never waits (the completer calls it). Notification
// jobs themselves (kind NotifyKind) are not notified of.
func (s *Services) NotifyDead(j *job.Job) {
	if s.cfg.NotifyJob == nil || j.Kind == s.cfg.NotifyKind {
		return
	}
	select {
	case s.deadQ <- j:
	default:
		s.deadDropped.Add(1)
	}
}

// deadBatch bounds the dead jobs one round of the notifier takes.
const deadBatch = 256

// notifier enqueues the notifications of the dead jobs NotifyDead queued:
// each round takes those waiting (up to deadBatch), reads the channels
// once and enqueues every notification in one store call.
func (s *Services) notifier(ctx context.Context) {
	for {
		var dead []*job.Job
		select {
		case <-ctx.Done():
			return
		case j := <-s.deadQ:
			dead = append(dead, j)
		}
	more:
		for len(dead) < deadBatch {
			select {
			case j := <-s.deadQ:
				dead = append(dead, j)
			default:
				break more
			}
		}
		if n := s.deadDropped.Swap(0); n > 0 {
			s.log.LogAttrs(ctx, slog.LevelWarn, "dead-job notifications dropped: too many at once", slog.Int64("dropped", n))
		}
		s.notifyDead(ctx, dead)
	}
}

// notifyDead enqueues the notifications of dead jobs, routed by their
// schedules' monitors.
func (s *Services) notifyDead(ctx context.Context, dead []*job.Job) {
	chans, err := s.channels(ctx)
	if err != nil || len(chans) == 0 {
		return
	}
	now := s.cfg.Now()
	named := map[string][]string{} // a schedule's channels, read once per round
	var jobs []*job.Job
	for _, j := range dead {
		n := &job.Notification{Event: job.NotifyJobDead, Status: job.StatusEvent, Schedule: j.Schedule, Job: j.ID, At: now,
			Detail: fmt.Sprintf("job %d (%s, queue %s) is dead after %d attempts: %s", j.ID, j.Kind, j.Queue, j.Attempt, j.LastError)}
		if j.Schedule != "" {
			n.Subject = job.ScheduleSubject(j.Schedule)
			if _, ok := named[j.Schedule]; !ok {
				sc, err := s.cfg.Store.GetSchedule(ctx, j.Schedule)
				switch {
				case err == nil && sc.Monitor != nil:
					named[j.Schedule] = sc.Monitor.Channels
				case err == nil || errors.Is(err, job.ErrNotFound):
					named[j.Schedule] = nil
				default:
					if ctx.Err() == nil {
						s.log.LogAttrs(ctx, slog.LevelError, "dead-job notification", slog.String("error", err.Error()))
					}
				}
			}
		}
		js, err := s.notificationJobs(chans, named[j.Schedule], n, now)
		if err != nil {
			s.log.LogAttrs(ctx, slog.LevelError, "dead-job notification", slog.String("error", err.Error()))
			continue
		}
		jobs = append(jobs, js...)
	}
	s.enqueue(ctx, jobs, now, job.NotifyJobDead)
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

// catchUpCap notifies that sc's catch-up at now left dropped ticks over
// its cap.
func (s *Services) catchUpCap(ctx context.Context, sc *job.Schedule, dropped, cap int, now time.Time) {
	s.Notify(ctx, sc, &job.Notification{Event: job.NotifyCatchUpCap, Status: job.StatusEvent, Subject: job.ScheduleSubject(sc.Name),
		Schedule: sc.Name, At: now, Detail: fmt.Sprintf("catch-up ran the latest %d missed ticks; %d older ones over the cap were not run", cap, dropped)})
}
