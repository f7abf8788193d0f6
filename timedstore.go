package hopper

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// timedStore reports the duration of every store operation to
// Config.OnStoreCall. The client wraps its store in one only when the hook
// is set; it takes the store's optional interfaces (Waker, Clock, Leader,
// TxEnqueuer) from the store itself.
type timedStore struct {
	s  store.Store
	on func(op string, took time.Duration, err error)
}

func (t timedStore) done(op string, start time.Time, err error) {
	t.on(op, time.Since(start), err)
}

func (t timedStore) Enqueue(ctx context.Context, p store.EnqueueParams) (r []store.EnqueueResult, err error) {
	defer func(start time.Time) { t.done("enqueue", start, err) }(time.Now())
	return t.s.Enqueue(ctx, p)
}

func (t timedStore) Claim(ctx context.Context, p store.ClaimParams) (r store.ClaimResult, err error) {
	defer func(start time.Time) { t.done("claim", start, err) }(time.Now())
	return t.s.Claim(ctx, p)
}

func (t timedStore) Finish(ctx context.Context, p store.FinishParams) (r []job.State, err error) {
	defer func(start time.Time) { t.done("finish", start, err) }(time.Now())
	return t.s.Finish(ctx, p)
}

// timedFinishClaimer is a timedStore of a store.FinishClaimer: the engine
// finds the interface through it.
type timedFinishClaimer struct {
	timedStore
	fc store.FinishClaimer
}

func (t timedFinishClaimer) FinishClaim(ctx context.Context, f store.FinishParams, c store.ClaimParams) (r []job.State, res store.ClaimResult, err error) {
	defer func(start time.Time) { t.done("finish_claim", start, err) }(time.Now())
	return t.fc.FinishClaim(ctx, f, c)
}

func (t timedStore) Heartbeat(ctx context.Context, p store.HeartbeatParams) (r store.HeartbeatResult, err error) {
	defer func(start time.Time) { t.done("heartbeat", start, err) }(time.Now())
	return t.s.Heartbeat(ctx, p)
}

func (t timedStore) Rescue(ctx context.Context, p store.RescueParams) (r []*job.Job, err error) {
	defer func(start time.Time) { t.done("rescue", start, err) }(time.Now())
	return t.s.Rescue(ctx, p)
}

func (t timedStore) Get(ctx context.Context, id job.ID) (r *job.Job, err error) {
	defer func(start time.Time) { t.done("get", start, err) }(time.Now())
	return t.s.Get(ctx, id)
}

func (t timedStore) List(ctx context.Context, p store.ListParams) (r []*job.Job, err error) {
	defer func(start time.Time) { t.done("list", start, err) }(time.Now())
	return t.s.List(ctx, p)
}

func (t timedStore) Count(ctx context.Context, p store.ListParams) (r int, err error) {
	defer func(start time.Time) { t.done("count", start, err) }(time.Now())
	return t.s.Count(ctx, p)
}

func (t timedStore) Stats(ctx context.Context, p store.StatsParams) (r store.Stats, err error) {
	defer func(start time.Time) { t.done("stats", start, err) }(time.Now())
	return t.s.Stats(ctx, p)
}

func (t timedStore) Cancel(ctx context.Context, p store.CancelParams) (r *job.Job, err error) {
	defer func(start time.Time) { t.done("cancel", start, err) }(time.Now())
	return t.s.Cancel(ctx, p)
}

func (t timedStore) Reschedule(ctx context.Context, p store.RescheduleParams) (r *job.Job, err error) {
	defer func(start time.Time) { t.done("reschedule", start, err) }(time.Now())
	return t.s.Reschedule(ctx, p)
}

func (t timedStore) RetryDead(ctx context.Context, p store.RetryDeadParams) (r int, err error) {
	defer func(start time.Time) { t.done("retry_dead", start, err) }(time.Now())
	return t.s.RetryDead(ctx, p)
}

func (t timedStore) Purge(ctx context.Context, p store.PurgeParams) (r int, err error) {
	defer func(start time.Time) { t.done("purge", start, err) }(time.Now())
	return t.s.Purge(ctx, p)
}

func (t timedStore) CancelMatching(ctx context.Context, p store.MatchParams) (r store.MatchResult, err error) {
	defer func(start time.Time) { t.done("cancel_matching", start, err) }(time.Now())
	return t.s.CancelMatching(ctx, p)
}

func (t timedStore) RetryMatching(ctx context.Context, p store.MatchParams) (r store.MatchResult, err error) {
	defer func(start time.Time) { t.done("retry_matching", start, err) }(time.Now())
	return t.s.RetryMatching(ctx, p)
}

func (t timedStore) DeleteMatching(ctx context.Context, p store.MatchParams) (r store.MatchResult, err error) {
	defer func(start time.Time) { t.done("delete_matching", start, err) }(time.Now())
	return t.s.DeleteMatching(ctx, p)
}

func (t timedStore) AddSchedule(ctx context.Context, p store.AddScheduleParams) (err error) {
	defer func(start time.Time) { t.done("add_schedule", start, err) }(time.Now())
	return t.s.AddSchedule(ctx, p)
}

func (t timedStore) GetSchedule(ctx context.Context, name string) (r *job.Schedule, err error) {
	defer func(start time.Time) { t.done("get_schedule", start, err) }(time.Now())
	return t.s.GetSchedule(ctx, name)
}

func (t timedStore) ListSchedules(ctx context.Context) (r []*job.Schedule, err error) {
	defer func(start time.Time) { t.done("list_schedules", start, err) }(time.Now())
	return t.s.ListSchedules(ctx)
}

func (t timedStore) UpdateSchedule(ctx context.Context, p store.UpdateScheduleParams) (r *job.Schedule, err error) {
	defer func(start time.Time) { t.done("update_schedule", start, err) }(time.Now())
	return t.s.UpdateSchedule(ctx, p)
}

func (t timedStore) RemoveSchedule(ctx context.Context, name string) (err error) {
	defer func(start time.Time) { t.done("remove_schedule", start, err) }(time.Now())
	return t.s.RemoveSchedule(ctx, name)
}

func (t timedStore) FireSchedule(ctx context.Context, p store.FireScheduleParams) (r store.FireResult, err error) {
	defer func(start time.Time) { t.done("fire_schedule", start, err) }(time.Now())
	return t.s.FireSchedule(ctx, p)
}

func (t timedStore) Close() error { return t.s.Close() }

func (t timedStore) OpenIncident(ctx context.Context, p store.OpenIncidentParams) (r store.IncidentResult, err error) {
	defer func(start time.Time) { t.done("open_incident", start, err) }(time.Now())
	return t.s.OpenIncident(ctx, p)
}

func (t timedStore) ResolveIncident(ctx context.Context, p store.ResolveIncidentParams) (r store.IncidentResult, err error) {
	defer func(start time.Time) { t.done("resolve_incident", start, err) }(time.Now())
	return t.s.ResolveIncident(ctx, p)
}

func (t timedStore) ListIncidents(ctx context.Context, p store.ListIncidentsParams) (r []*job.Incident, err error) {
	defer func(start time.Time) { t.done("list_incidents", start, err) }(time.Now())
	return t.s.ListIncidents(ctx, p)
}

func (t timedStore) PutChannel(ctx context.Context, c *job.Channel) (err error) {
	defer func(start time.Time) { t.done("put_channel", start, err) }(time.Now())
	return t.s.PutChannel(ctx, c)
}

func (t timedStore) GetChannel(ctx context.Context, name string) (r *job.Channel, err error) {
	defer func(start time.Time) { t.done("get_channel", start, err) }(time.Now())
	return t.s.GetChannel(ctx, name)
}

func (t timedStore) ListChannels(ctx context.Context) (r []*job.Channel, err error) {
	defer func(start time.Time) { t.done("list_channels", start, err) }(time.Now())
	return t.s.ListChannels(ctx)
}

func (t timedStore) RemoveChannel(ctx context.Context, name string) (err error) {
	defer func(start time.Time) { t.done("remove_channel", start, err) }(time.Now())
	return t.s.RemoveChannel(ctx, name)
}

func (t timedStore) LastRuns(ctx context.Context, p store.LastRunsParams) (r []*job.Job, err error) {
	defer func(start time.Time) { t.done("last_runs", start, err) }(time.Now())
	return t.s.LastRuns(ctx, p)
}

func (t timedStore) PendingDeaths(ctx context.Context, limit int) (r []*job.Job, err error) {
	defer func(start time.Time) { t.done("pending_deaths", start, err) }(time.Now())
	return t.s.PendingDeaths(ctx, limit)
}

func (t timedStore) NoteDeaths(ctx context.Context, p store.NoteDeathsParams) (r store.NoteDeathsResult, err error) {
	defer func(start time.Time) { t.done("note_deaths", start, err) }(time.Now())
	return t.s.NoteDeaths(ctx, p)
}

func (t timedStore) Outputs(ctx context.Context, p store.OutputsParams) (r []*job.Output, err error) {
	defer func(start time.Time) { t.done("outputs", start, err) }(time.Now())
	return t.s.Outputs(ctx, p)
}

func (t timedStore) PruneOutputs(ctx context.Context, p store.PruneOutputsParams) (r int, err error) {
	defer func(start time.Time) { t.done("prune_outputs", start, err) }(time.Now())
	return t.s.PruneOutputs(ctx, p)
}

func (t timedStore) AddCheck(ctx context.Context, c *job.Check) (err error) {
	defer func(start time.Time) { t.done("add_check", start, err) }(time.Now())
	return t.s.AddCheck(ctx, c)
}

func (t timedStore) GetCheck(ctx context.Context, name string) (r *job.Check, err error) {
	defer func(start time.Time) { t.done("get_check", start, err) }(time.Now())
	return t.s.GetCheck(ctx, name)
}

func (t timedStore) ListChecks(ctx context.Context) (r []*job.Check, err error) {
	defer func(start time.Time) { t.done("list_checks", start, err) }(time.Now())
	return t.s.ListChecks(ctx)
}

func (t timedStore) RemoveCheck(ctx context.Context, name string) (err error) {
	defer func(start time.Time) { t.done("remove_check", start, err) }(time.Now())
	return t.s.RemoveCheck(ctx, name)
}

func (t timedStore) PauseCheck(ctx context.Context, name string, paused bool) (r *job.Check, err error) {
	defer func(start time.Time) { t.done("pause_check", start, err) }(time.Now())
	return t.s.PauseCheck(ctx, name, paused)
}

func (t timedStore) PingCheck(ctx context.Context, p store.PingCheckParams) (c *job.Check, r *job.Ping, err error) {
	defer func(start time.Time) { t.done("ping_check", start, err) }(time.Now())
	return t.s.PingCheck(ctx, p)
}

func (t timedStore) ListPings(ctx context.Context, p store.ListPingsParams) (r []*job.Ping, err error) {
	defer func(start time.Time) { t.done("list_pings", start, err) }(time.Now())
	return t.s.ListPings(ctx, p)
}
