package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hopperq/hopper/job"
)

// Checks is the part of Store that keeps the external checks
// (job.Check) and their ping logs.
type Checks interface {
	// AddCheck inserts a check, or returns job.ErrDuplicate if its name
	// or its ping ID is taken. The check must pass job.Check.Check; its
	// state fields are stored as given.
	AddCheck(ctx context.Context, c *job.Check) error
	// GetCheck returns a check by name, or job.ErrNotFound.
	GetCheck(ctx context.Context, name string) (*job.Check, error)
	// ListChecks returns every check ordered by name.
	ListChecks(ctx context.Context) ([]*job.Check, error)
	// RemoveCheck deletes a check and its ping log, or returns
	// job.ErrNotFound.
	RemoveCheck(ctx context.Context, name string) error
	// PauseCheck pauses or resumes a check (job.Check.SetPaused: a check
	// resumed is new again) and returns it, or job.ErrNotFound.
	PauseCheck(ctx context.Context, name string, paused bool) (*job.Check, error)
	// PingCheck applies p.Ping (job.Check.Apply) to the check whose ping
	// ID is p.PingID, appends the ping to its log and deletes the oldest
	// pings beyond p.Keep, in one atomic step, and returns the check and
	// the ping as stored. An unknown ping ID is job.ErrNotFound and
	// changes nothing.
	PingCheck(ctx context.Context, p PingCheckParams) (*job.Check, *job.Ping, error)
	// ListPings returns the pings of check p.Check kept in its log,
	// newest first, at most p.Limit (0: all kept). An unknown check has
	// none: an empty list, not nil.
	ListPings(ctx context.Context, p ListPingsParams) ([]*job.Ping, error)
}

// PingCheckParams are the arguments of Store.PingCheck.
type PingCheckParams struct {
	PingID string
	// Ping is the ping, its Kind, At and request fields set; PingCheck
	// sets its Check, Seq and Duration.
	Ping *job.Ping
	// Keep is how many pings the check's log keeps (at least 1).
	Keep int
}

// Validate returns a *job.FieldError unless p is valid.
func (p PingCheckParams) Validate() error {
	if p.Ping == nil {
		return job.Invalid("ping", "must be set")
	}
	if p.Keep < 1 {
		return job.Invalid("keep", "must be at least 1, got %d", p.Keep)
	}
	return job.CheckPing(p.Ping)
}

// ListPingsParams are the arguments of Store.ListPings.
type ListPingsParams struct {
	Check string
	Limit int
}

// EncodeCheck returns the JSON the SQL stores keep of a check.
func EncodeCheck(c *job.Check) (string, error) {
	b, err := json.Marshal(c)
	return string(b), err
}

// DecodeCheck reads what EncodeCheck wrote.
func DecodeCheck(b []byte) (*job.Check, error) {
	var c job.Check
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("stored check: %w", err)
	}
	return &c, nil
}

// EncodePing returns the JSON the SQL stores keep of a ping.
func EncodePing(p *job.Ping) (string, error) {
	b, err := json.Marshal(p)
	return string(b), err
}

// DecodePing reads what EncodePing wrote.
func DecodePing(b []byte) (*job.Ping, error) {
	var p job.Ping
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("stored ping: %w", err)
	}
	return &p, nil
}
