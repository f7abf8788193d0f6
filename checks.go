package hopper

import (
	"context"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// External checks, re-exported; see job.Check and job.Ping.
type (
	// Check is an external check (a dead man's switch); see job.Check.
	Check = job.Check
	// Ping is one request to a check's ping URL; see job.Ping.
	Ping = job.Ping
)

// CheckOptions configure a new external check (AddCheck). Set Period or
// Cron.
type CheckOptions struct {
	// Period is the expected time between success pings.
	Period time.Duration
	// Cron is a cron expression whose ticks are when success pings are
	// expected, in TimeZone (an IANA name; "" is UTC).
	Cron     string
	TimeZone string
	// Grace is how late a ping may be (and how long a started run may
	// last) before the check is down; DefaultCheckGrace if zero.
	Grace time.Duration
	// Channels names the notification channels of its incidents, besides
	// those taking every subject.
	Channels []string
	// PingID is the secret of the ping URL; "" makes a random one
	// (job.NewPingID, 128 bits). Set it to keep an existing URL, such as
	// a Healthchecks check's UUID (job.CheckPingID says what is valid).
	PingID string
}

// DefaultCheckGrace is a check's grace when CheckOptions.Grace is zero,
// Healthchecks' default.
const DefaultCheckGrace = time.Hour

// AddCheck creates an external check named name, new (it goes down only
// after its first ping), and returns it with its ping ID: its ping URL is
// the HTTP server's /ping/ID (docs/monitoring.md, "External checks").
// Invalid options are a *FieldError; a name or ping ID taken is
// ErrDuplicate.
func (c *Client) AddCheck(ctx context.Context, name string, o CheckOptions) (*Check, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	ch := &Check{Name: name, PingID: o.PingID, Period: o.Period, Cron: o.Cron, TimeZone: o.TimeZone, Grace: o.Grace,
		Channels: o.Channels, CreatedAt: c.now()}
	if ch.PingID == "" {
		ch.PingID = job.NewPingID()
	}
	if ch.Grace == 0 {
		ch.Grace = DefaultCheckGrace
	}
	if err := c.store.AddCheck(ctx, ch); err != nil {
		return nil, err
	}
	return ch, nil
}

// GetCheck returns a check by name, or ErrNotFound. Its Status(now) says
// whether it is up, late, down…
func (c *Client) GetCheck(ctx context.Context, name string) (*Check, error) {
	return c.store.GetCheck(ctx, name)
}

// Checks returns every check, by name.
func (c *Client) Checks(ctx context.Context) ([]*Check, error) {
	return c.store.ListChecks(ctx)
}

// PauseCheck stops a check from going down until ResumeCheck or its next
// success or failure ping; an open incident is resolved ("up").
func (c *Client) PauseCheck(ctx context.Context, name string) (*Check, error) {
	ch, err := c.store.PauseCheck(ctx, name, true)
	if err == nil {
		c.maint.WakeMonitor()
	}
	return ch, err
}

// ResumeCheck resumes a paused check, which is new again: it goes down
// only after its next ping (as Healthchecks does).
func (c *Client) ResumeCheck(ctx context.Context, name string) (*Check, error) {
	ch, err := c.store.PauseCheck(ctx, name, false)
	if err == nil {
		c.maint.WakeMonitor()
	}
	return ch, err
}

// RemoveCheck deletes a check and its ping log, or returns ErrNotFound;
// an open incident of it is resolved.
func (c *Client) RemoveCheck(ctx context.Context, name string) error {
	if c.closed() {
		return ErrClientStopped
	}
	if err := c.store.RemoveCheck(ctx, name); err != nil {
		return err
	}
	c.maint.WakeMonitor()
	return nil
}

// Pings returns the pings kept of check name (the latest
// job.DefaultPingsKept), newest first, at most limit (0: all kept).
func (c *Client) Pings(ctx context.Context, name string, limit int) ([]*Ping, error) {
	if _, err := c.store.GetCheck(ctx, name); err != nil {
		return nil, err
	}
	return c.store.ListPings(ctx, store.ListPingsParams{Check: name, Limit: limit})
}

// PingCheck records p, a ping to the check whose ping ID is pingID, as the
// HTTP server's /ping routes do: p.Kind and the request's fields set, p.At
// set to now if zero, a body longer than job.MaxPingBody truncated. It
// returns the check and the ping as stored, or ErrNotFound for an unknown
// ping ID (nothing changes then). A failure, a start or a ping that gives
// the check a deadline it had none of (Ping.Armed: a new check's first
// success or failure, a resumed check's too, a success after a failure)
// wakes the monitor, so that the incident opens or resolves at once, or
// the new deadline is kept, when this process leads maintenance (else
// within the leader's next round, at most 5 s).
func (c *Client) PingCheck(ctx context.Context, pingID string, p Ping) (*Check, *Ping, error) {
	if c.closed() {
		return nil, nil, ErrClientStopped
	}
	if p.At.IsZero() {
		p.At = c.now()
	}
	if len(p.Body) > job.MaxPingBody {
		p.Body, p.Truncated = p.Body[:job.MaxPingBody], true
	}
	p.Body = strings.ToValidUTF8(p.Body, "\uFFFD")
	if len(p.UserAgent) > job.MaxPingUserAgent {
		p.UserAgent = p.UserAgent[:job.MaxPingUserAgent]
	}
	p.UserAgent = strings.ToValidUTF8(p.UserAgent, "\uFFFD")
	ch, pg, err := c.store.PingCheck(ctx, store.PingCheckParams{PingID: pingID, Ping: &p, Keep: job.DefaultPingsKept})
	if err != nil {
		return nil, nil, err
	}
	// The monitor wakes at the deadlines it knows; these pings may make
	// one earlier than those: a failure (down now), a start (its run's
	// grace), a ping arming a check that had none (a new or resumed
	// check's, a success ending a failure: its incident resolves).
	if pg.Kind == job.PingFail || pg.Kind == job.PingStart || pg.Armed {
		c.maint.WakeMonitor()
	}
	return ch, pg, nil
}

// Now returns the client's clock: the store's when it has one (the
// database server's, on a store shared by several hosts), else this
// host's. Pings are stamped and checks evaluated by it: pass it to
// Check.Status and Check.View.
func (c *Client) Now() time.Time { return c.now() }
