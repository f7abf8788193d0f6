package hopper

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// NotifyKind is the kind of notification jobs: each notification — an
// incident opened ("down") or resolved ("up"), a dead job, a catch-up over
// its cap — is a job of this kind per channel, with retries and the
// dead-letter queue as any job. Its args are NotifyArgs; its handler is
// the kinds package's (kinds.RegisterNotify), which the hopper command
// registers. A client without it stores the jobs for a process that has it.
const NotifyKind = "hopper.notify"

// NotifyArgs are the args of a notification job: the channel's name — its
// settings, secrets included, are read from the store when the job runs,
// so that no secret is in a job's args — and what to send.
type NotifyArgs struct {
	Channel      string       `json:"channel"`
	Notification Notification `json:"notification"`
}

// notificationJob is the maintenance services' NotifyJob: the validated
// job sending n to the channel named, its options those of NotifyKind.
func (c *Client) notificationJob(channel string, n *job.Notification, now time.Time) (*job.Job, error) {
	args, err := json.Marshal(NotifyArgs{Channel: channel, Notification: *n})
	if err != nil {
		return nil, err
	}
	o := c.options(NotifyKind, nil)
	j := &job.Job{Kind: NotifyKind, Args: args, Queue: o.Queue, Priority: o.Priority, MaxAttempts: o.MaxAttempts,
		Timeout: o.Timeout, Retry: o.Retry.Clone()}
	if err := j.Validate(now); err != nil {
		return nil, err
	}
	return j, nil
}

// SetChannel adds a notification channel, or replaces the one of the same
// name. Invalid settings are a *FieldError naming the field (the URL's
// scheme, the mail addresses…); whether the URL's address is allowed is
// checked when a notification is sent, by the server's outbound policy
// (kinds.HTTPPolicy), as for the http kind. The channel is kept in the
// store, secrets included: every process sharing it sends through it.
func (c *Client) SetChannel(ctx context.Context, ch Channel) error {
	if c.closed() {
		return ErrClientStopped
	}
	if err := ch.Check(); err != nil {
		return err
	}
	ch.CreatedAt = c.now()
	return c.store.PutChannel(ctx, ch.Clone())
}

// Channel returns the channel name with its secrets (Channel.Redacted
// hides them), or ErrNotFound.
func (c *Client) Channel(ctx context.Context, name string) (*Channel, error) {
	return c.store.GetChannel(ctx, name)
}

// Channels returns every channel, by name, with their secrets.
func (c *Client) Channels(ctx context.Context) ([]*Channel, error) {
	return c.store.ListChannels(ctx)
}

// RemoveChannel deletes a channel, or returns ErrNotFound. Notification
// jobs already enqueued for it then fail permanently (dead), saying why.
func (c *Client) RemoveChannel(ctx context.Context, name string) error {
	if c.closed() {
		return ErrClientStopped
	}
	return c.store.RemoveChannel(ctx, name)
}

// TestChannel enqueues a notification job sending a test notification
// (event "test", status "event") to the channel name, and returns it; the
// channel must exist (else ErrNotFound).
func (c *Client) TestChannel(ctx context.Context, name string) (*Job, error) {
	if _, err := c.store.GetChannel(ctx, name); err != nil {
		return nil, err
	}
	now := c.now()
	j, err := c.notificationJob(name, &job.Notification{Event: "test", Status: job.StatusEvent,
		Detail: "a test notification from Hopper", At: now}, now)
	if err != nil {
		return nil, err
	}
	res, err := c.store.Enqueue(ctx, store.EnqueueParams{Now: now, Jobs: []*job.Job{j}})
	if err != nil {
		return nil, err
	}
	c.notify()
	return c.store.Get(ctx, res[0].ID)
}

// IncidentFilter selects incidents for Incidents. Zero fields do not
// filter.
type IncidentFilter struct {
	// Schedule keeps the incidents of one schedule.
	Schedule string
	// Check keeps the incidents of one external check (if Schedule is
	// not set).
	Check string
	// Open keeps the incidents not resolved yet.
	Open bool
	// Before keeps incidents whose ID is below it (the next page).
	Before int64
	// Limit is the most returned (default 100).
	Limit int
}

// Incidents lists the incidents the schedules' monitors and the external
// checks found, newest first: one per problem (missed start, over
// duration, failing, check down) from the
// moment it was found (its "down" notification) to the moment it ended
// (its "up"). A Schedule no schedule can have (job.CheckName) is a
// *FieldError on "schedule".
func (c *Client) Incidents(ctx context.Context, f IncidentFilter) ([]*Incident, error) {
	if f.Limit < 0 {
		return nil, &FieldError{Field: "limit", Reason: "must not be negative"}
	}
	if f.Schedule != "" {
		if err := job.CheckName("schedule", f.Schedule); err != nil {
			return nil, err // no schedule has this name (and PostgreSQL would refuse a NUL)
		}
	}
	p := store.ListIncidentsParams{OpenOnly: f.Open, BeforeID: f.Before, Limit: f.Limit}
	switch {
	case f.Schedule != "":
		p.Subject = job.ScheduleSubject(f.Schedule)
	case f.Check != "":
		p.Subject = job.CheckSubject(f.Check)
	}
	return c.store.ListIncidents(ctx, p)
}

// CheckMonitors evaluates every schedule's monitor at now, opening and
// resolving incidents (with their notification jobs), and returns the
// earliest time a problem may start. The running client's leader does
// this by itself; CheckMonitors is for stepping through time in tests, as
// FireSchedules is.
func (c *Client) CheckMonitors(ctx context.Context, at time.Time) time.Time {
	return c.maint.CheckMonitors(ctx, at)
}
