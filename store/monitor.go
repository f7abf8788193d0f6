package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperq/hopper/job"
)

// Monitoring is the part of Store the schedule monitor and its
// notifications use: incidents (one open per subject and problem, opened
// and resolved by compare-and-set, with the notification jobs of the
// transition enqueued in the same atomic step), the notification
// channels, and a schedule's latest finished runs.
type Monitoring interface {
	// OpenIncident opens p.Incident unless its subject already has an
	// open incident of its problem: then nothing changes and Opened is
	// false. When it opens, the store gives the incident its ID, enqueues
	// the jobs p.Notify returns for it (each as Enqueue would; nil: none)
	// and pauses p.Pause, a schedule's name if set (a schedule since
	// removed is no error), all in one atomic step.
	OpenIncident(ctx context.Context, p OpenIncidentParams) (IncidentResult, error)
	// ResolveIncident sets ResolvedAt of the open incident p.ID to p.At
	// and enqueues the jobs p.Notify returns for it, in one atomic step;
	// an incident already resolved (by another process) changes nothing
	// and Changed is false, and an unknown one is job.ErrNotFound.
	ResolveIncident(ctx context.Context, p ResolveIncidentParams) (IncidentResult, error)
	// ListIncidents returns incidents newest first (by ID), see
	// ListIncidentsParams; none is an empty list, not nil.
	ListIncidents(ctx context.Context, p ListIncidentsParams) ([]*job.Incident, error)

	// PutChannel stores a notification channel, replacing one of the
	// same name. The channel must pass job.Channel.Check.
	PutChannel(ctx context.Context, c *job.Channel) error
	// GetChannel returns a channel by name, or job.ErrNotFound.
	GetChannel(ctx context.Context, name string) (*job.Channel, error)
	// ListChannels returns every channel ordered by name.
	ListChannels(ctx context.Context) ([]*job.Channel, error)
	// RemoveChannel deletes a channel, or job.ErrNotFound.
	RemoveChannel(ctx context.Context, name string) error

	// LastRuns returns the latest finished runs — completed or dead jobs —
	// of schedule p.Schedule, newest (highest ID) first, at most p.Limit.
	LastRuns(ctx context.Context, p LastRunsParams) ([]*job.Job, error)

	// PendingDeaths returns at most limit (at least 1) dead jobs whose
	// death is not noted yet (NoteDeaths), lowest ID first: the outbox of
	// the dead-job notifications. Every way to dead leaves a death unnoted
	// (an attempt's outcome, a rescue, a schedule's supersede), and a job
	// retried from the dead-letter queue that dies again is unnoted again;
	// deleting the job removes it.
	PendingDeaths(ctx context.Context, limit int) ([]*job.Job, error)
	// NoteDeaths notes the deaths of p.Deaths, dead jobs as PendingDeaths
	// returned them, and enqueues the jobs p.Notify returns for each, in
	// one atomic step. A death already noted (by another process), or no
	// longer the job's (retried, dead again at another time, deleted), is
	// skipped: Notify is not called for it. So each death's jobs are
	// enqueued once, however many processes note it at once.
	NoteDeaths(ctx context.Context, p NoteDeathsParams) (NoteDeathsResult, error)
}

// NoteDeathsParams are the arguments of Store.NoteDeaths.
type NoteDeathsParams struct {
	// Deaths are dead jobs as PendingDeaths returned them: their ID and
	// FinishedAt name the death.
	Deaths []*job.Job
	// Notify, if set, returns the validated jobs to enqueue for a death
	// noted. It runs inside the store's transaction: it must not call the
	// store.
	Notify func(*job.Job) ([]*job.Job, error)
}

// NoteDeathsResult is the outcome of Store.NoteDeaths.
type NoteDeathsResult struct {
	// Noted are the IDs of the jobs whose deaths this call noted.
	Noted []job.ID
	// Jobs are the IDs of the jobs Notify's were enqueued as.
	Jobs []job.ID
}

// CheckPendingLimit returns a *job.FieldError unless limit, of
// PendingDeaths, is at least 1.
func CheckPendingLimit(limit int) error {
	if limit < 1 {
		return job.Invalid("limit", "must be at least 1, got %d", limit)
	}
	return nil
}

// DeathJobs calls notify for the dead job d (nil: no jobs) and checks the
// jobs it returns as Enqueue checks its own (CheckNewJob).
func DeathJobs(notify func(*job.Job) ([]*job.Job, error), d *job.Job) ([]*job.Job, error) {
	return checkedJobs(notify, d)
}

// OpenIncidentParams are the arguments of Store.OpenIncident.
type OpenIncidentParams struct {
	// Incident is the incident to open: Subject, Problem and OpenedAt
	// set, ResolvedAt zero, its ID ignored.
	Incident *job.Incident
	// Notify, if set, returns the validated jobs to enqueue with the
	// opening, given the incident with its ID. It runs inside the store's
	// transaction: it must not call the store.
	Notify func(*job.Incident) ([]*job.Job, error)
	// Pause, if set, is a schedule to pause with the opening.
	Pause string
}

// ResolveIncidentParams are the arguments of Store.ResolveIncident.
type ResolveIncidentParams struct {
	ID     int64
	At     time.Time
	Notify func(*job.Incident) ([]*job.Job, error) // as OpenIncidentParams.Notify
}

// IncidentResult is the outcome of OpenIncident and ResolveIncident.
type IncidentResult struct {
	// Changed: the incident was opened (or resolved) by this call.
	Changed bool
	// Incident is the incident as stored: the one opened or resolved, or
	// when not Changed the one already open (for OpenIncident) or
	// resolved (ResolveIncident).
	Incident *job.Incident
	// Jobs are the IDs of the jobs Notify's were enqueued as.
	Jobs []job.ID
}

// CheckIncident returns a *job.FieldError unless in can be opened.
func CheckIncident(in *job.Incident) error {
	switch {
	case in == nil || in.Subject == "":
		return job.Invalid("subject", "must not be empty")
	case !in.Problem.Valid():
		return job.Invalid("problem", "%q: want missed_start, over_duration, failing or check_down", in.Problem)
	case in.OpenedAt.IsZero():
		return job.Invalid("opened_at", "must be set")
	case !in.ResolvedAt.IsZero():
		return job.Invalid("resolved_at", "must be zero for an incident to open")
	}
	return nil
}

// NotifyJobs calls notify for in (nil: no jobs) and checks the jobs it
// returns as Enqueue checks its own (CheckNewJob).
func NotifyJobs(notify func(*job.Incident) ([]*job.Job, error), in *job.Incident) ([]*job.Job, error) {
	return checkedJobs(notify, in)
}

// checkedJobs calls notify for v (nil: no jobs) and checks each job it
// returns with CheckNewJob.
func checkedJobs[T any](notify func(T) ([]*job.Job, error), v T) ([]*job.Job, error) {
	if notify == nil {
		return nil, nil
	}
	jobs, err := notify(v)
	if err != nil {
		return nil, err
	}
	for i, j := range jobs {
		if err := CheckNewJob(j, i, len(jobs)); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// ListIncidentsParams filter Store.ListIncidents.
type ListIncidentsParams struct {
	Subject  string // "" for all
	OpenOnly bool   // only incidents not resolved
	BeforeID int64  // if set, only IDs below it (the next page)
	Limit    int    // 0: DefaultListLimit
}

// LastRunsParams are the arguments of Store.LastRuns.
type LastRunsParams struct {
	Schedule string
	Limit    int // at least 1
}

// EncodeMonitor returns the JSON the SQL stores keep of a schedule's
// monitor: nil for none.
func EncodeMonitor(m *job.Monitor) ([]byte, error) {
	if m == nil {
		return nil, nil
	}
	return json.Marshal(m)
}

// DecodeMonitor reads what EncodeMonitor wrote: nil or empty is no monitor.
func DecodeMonitor(b []byte) (*job.Monitor, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var m job.Monitor
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("stored monitor: %w", err)
	}
	return &m, nil
}
