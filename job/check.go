package job

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/schedule"
)

// Check is an external check: a dead man's switch for work that runs
// outside Hopper (a crontab line, a systemd timer, a CI job), which
// reports by requesting its ping URL, /ping/PingID, as Healthchecks.io's
// clients do. It expects a success ping every Period (or at each tick of
// Cron, in TimeZone) and goes down when none came within Grace after
// that, when a run that pinged "start" did not finish within Grace, or on
// a failure ping. The monitor then opens an incident (subject
// CheckSubject(Name), problem ProblemCheckDown) and notifies the
// channels, as it does for schedules.
//
// The fields from LastPingAt on are the check's state, which pings change
// (Apply); the others are its settings.
type Check struct {
	Name string
	// PingID is the secret part of the ping URL: whoever knows it can ping
	// the check. NewPingID makes one of 128 random bits; an ID of one's
	// own (a Healthchecks UUID kept when moving) must pass CheckPingID.
	PingID string
	// Period is the expected time between success pings; Cron, if set
	// instead, is a cron expression (package schedule's syntax) whose
	// ticks are the times a success ping is expected, in TimeZone (an
	// IANA name; "" is UTC).
	Period   time.Duration
	Cron     string
	TimeZone string
	// Grace is how late a ping may be before the check is down, and how
	// long a started run may last.
	Grace time.Duration
	// Channels names the notification channels this check's incidents go
	// to, besides those that take every subject (Channel.All).
	Channels []string
	// Paused checks never go down; a success or failure ping resumes one.
	Paused    bool
	CreatedAt time.Time

	// LastPingAt is the time of the last success or failure ping (zero:
	// the check is new and never goes down).
	LastPingAt time.Time
	// Failed: the last such ping was a failure.
	Failed bool
	// Runs are the runs started ("start" pings) and not finished yet,
	// oldest first, at most MaxOpenRuns (the oldest is dropped).
	Runs []CheckRun
	// LastDuration is the duration of the last finished run that pinged
	// its start (zero if it did not).
	LastDuration time.Duration
	// Pings counts the pings received, of every kind.
	Pings int64
}

// CheckRun is a run that pinged its start: its run ID (?rid=, "" if none)
// and when it started.
type CheckRun struct {
	RID     string    `json:"rid,omitempty"`
	Started time.Time `json:"started"`
}

// Bounds of a Check.
const (
	MinCheckPeriod = time.Second
	MaxCheckPeriod = 366 * 24 * time.Hour
	MinCheckGrace  = time.Second
	MaxCheckGrace  = 366 * 24 * time.Hour
	// MaxOpenRuns bounds the runs a check tracks between their start and
	// finish pings.
	MaxOpenRuns = 10
	// MaxRIDSize bounds a run ID.
	MaxRIDSize = 128
)

// NewPingID returns a new ping ID: 128 bits from crypto/rand in URL-safe
// base64 without padding (22 characters).
func NewPingID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// CheckPingID returns a *FieldError unless id can be a ping ID: 22 to 64
// characters of A–Z, a–z, 0–9, '-' and '_' (a UUID fits).
func CheckPingID(id string) error {
	if len(id) < 22 || len(id) > 64 {
		return Invalid("ping_id", "must be 22 to 64 characters, got %d", len(id))
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return Invalid("ping_id", "must hold only letters, digits, '-' and '_'")
		}
	}
	return nil
}

// Check returns a *FieldError unless c's settings are valid.
func (c *Check) Check() error {
	if err := CheckName("name", c.Name); err != nil {
		return err
	}
	if err := CheckPingID(c.PingID); err != nil {
		return err
	}
	switch {
	case (c.Period == 0) == (c.Cron == ""):
		return Invalid("period", "want either a period or a cron expression")
	case c.Cron == "" && (c.Period < MinCheckPeriod || c.Period > MaxCheckPeriod):
		return Invalid("period", "must be between %s and %s, got %s", MinCheckPeriod, MaxCheckPeriod, c.Period)
	case c.Cron == "" && c.TimeZone != "":
		return Invalid("time_zone", "applies to a cron expression only")
	case c.Grace < MinCheckGrace || c.Grace > MaxCheckGrace:
		return Invalid("grace", "must be between %s and %s, got %s", MinCheckGrace, MaxCheckGrace, c.Grace)
	}
	if c.Cron != "" {
		if _, err := c.rule(); err != nil {
			return err
		}
	}
	if len(c.Channels) > MaxMonitorChannels {
		return Invalid("channels", "%d channels, more than the limit of %d", len(c.Channels), MaxMonitorChannels)
	}
	for _, ch := range c.Channels {
		if err := CheckName("channels", ch); err != nil {
			return err
		}
	}
	return nil
}

// rule returns c's cron rule; "@every" is refused (a period says it).
func (c *Check) rule() (schedule.Rule, error) {
	loc := time.UTC
	if c.TimeZone != "" {
		l, err := time.LoadLocation(c.TimeZone)
		if err != nil || c.TimeZone == "Local" {
			return nil, Invalid("time_zone", "unknown time zone %q", c.TimeZone)
		}
		loc = l
	}
	if strings.HasPrefix(strings.TrimSpace(c.Cron), "@every") {
		return nil, Invalid("cron", "use a period for a fixed interval")
	}
	r, err := schedule.Parse(c.Cron, loc)
	if err != nil {
		return nil, Invalid("cron", "%v", err)
	}
	return r, nil
}

// Clone returns a deep copy of c.
func (c *Check) Clone() *Check {
	o := *c
	o.Channels, o.Runs = slices.Clone(c.Channels), slices.Clone(c.Runs)
	return &o
}

// SetPaused pauses or resumes c. Resuming a paused check makes it new
// again, as Healthchecks does: no alert until its next ping, however old
// the last one is (LastPingAt, Failed and Runs are cleared).
func (c *Check) SetPaused(paused bool) {
	if c.Paused && !paused {
		c.LastPingAt, c.Failed, c.Runs = time.Time{}, false, nil
	}
	c.Paused = paused
}

// Check statuses (Check.Status), as Healthchecks names them.
const (
	CheckNew     = "new"     // no success or failure ping yet
	CheckUp      = "up"      // the last ping was a success, on time
	CheckStarted = "started" // up, with a run started and not finished
	CheckGrace   = "grace"   // a success ping is late, within the grace
	CheckDown    = "down"    // failed, or late beyond the grace
	CheckPaused  = "paused"
)

// Due returns when c's next success ping is expected: LastPingAt plus the
// period, or the first tick of Cron after LastPingAt. It is zero for a new
// check (and for a cron expression without a next tick).
func (c *Check) Due() time.Time {
	if c.LastPingAt.IsZero() {
		return time.Time{}
	}
	if c.Cron == "" {
		return c.LastPingAt.Add(c.Period)
	}
	r, err := c.rule()
	if err != nil {
		return time.Time{}
	}
	return r.Next(c.LastPingAt)
}

// DownAt returns when c goes down unless pinged: its due time plus the
// grace, or the oldest unfinished run's start plus the grace if sooner.
// It is zero when no ping is awaited: c is new, paused or failed (a
// failed check is down until a success ping).
func (c *Check) DownAt() time.Time {
	if c.Paused || c.Failed || c.LastPingAt.IsZero() {
		return time.Time{}
	}
	var at time.Time
	if due := c.Due(); !due.IsZero() {
		at = due.Add(c.Grace)
	}
	if len(c.Runs) > 0 {
		if s := c.Runs[0].Started.Add(c.Grace); at.IsZero() || s.Before(at) {
			at = s
		}
	}
	return at
}

// Status returns c's status at now (one of the Check constants).
func (c *Check) Status(now time.Time) string {
	switch {
	case c.Paused:
		return CheckPaused
	case c.LastPingAt.IsZero():
		return CheckNew
	case c.Failed:
		return CheckDown
	}
	if at := c.DownAt(); !at.IsZero() && !now.Before(at) {
		return CheckDown
	}
	if due := c.Due(); !due.IsZero() && !now.Before(due) {
		return CheckGrace
	}
	if len(c.Runs) > 0 {
		return CheckStarted
	}
	return CheckUp
}

// DownReason returns why c is down at now, for an incident's detail, or
// "" if it is not.
func (c *Check) DownReason(now time.Time) string {
	if c.Status(now) != CheckDown {
		return ""
	}
	if c.Failed {
		return fmt.Sprintf("a failure ping at %s", c.LastPingAt.UTC().Format(time.RFC3339))
	}
	if len(c.Runs) > 0 && !now.Before(c.Runs[0].Started.Add(c.Grace)) {
		r := c.Runs[0]
		s := fmt.Sprintf("the run started at %s did not finish within %s", r.Started.UTC().Format(time.RFC3339), c.Grace)
		if r.RID != "" {
			s = fmt.Sprintf("the run %q started at %s did not finish within %s", r.RID, r.Started.UTC().Format(time.RFC3339), c.Grace)
		}
		return s
	}
	return fmt.Sprintf("no ping since %s: one was due at %s, grace %s", c.LastPingAt.UTC().Format(time.RFC3339),
		c.Due().UTC().Format(time.RFC3339), c.Grace)
}

// PingKind is what a ping reports. Its values are stored as text.
type PingKind string

// The kinds of ping, after Healthchecks' routes: /ping/ID (or an exit
// code 0) is a success, /start a start, /fail (or an exit code 1–255) a
// failure, /log only a message.
const (
	PingSuccess PingKind = "success"
	PingStart   PingKind = "start"
	PingFail    PingKind = "fail"
	PingLog     PingKind = "log"
)

// Ping is one request to a check's ping URL, as kept in its ping log.
type Ping struct {
	// Seq numbers the check's pings from 1 (Check.Pings).
	Seq   int64    `json:"seq"`
	Check string   `json:"check"`
	Kind  PingKind `json:"kind"`
	// ExitCode is the code of an /EXIT_CODE ping, else nil.
	ExitCode *int   `json:"exit_code,omitempty"`
	RID      string `json:"rid,omitempty"`
	At       time.Time
	// Duration is, for a success or failure, the time since the start
	// ping of the same run ID, if one is open.
	Duration   time.Duration
	Method     string `json:"method,omitempty"`
	RemoteAddr string `json:"remote_addr,omitempty"`
	UserAgent  string `json:"user_agent,omitempty"`
	// Body is the request's body, at most MaxPingBody bytes (Truncated
	// says it was longer), with invalid UTF-8 replaced.
	Body      string `json:"body,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Armed is set by Apply when the ping gave the check a time to go
	// down (DownAt) it had none of: a success or failure of a new check —
	// its first ping, or its first since it was resumed — or a success
	// after a failure. The monitor, asleep until the deadlines it knew,
	// must look again. It is not stored: only the ping Apply (and
	// Store.PingCheck) returns carries it.
	Armed bool `json:"-"`
}

// Bounds of a Ping.
const (
	// MaxPingBody bounds the body kept of a ping, as self-hosted
	// Healthchecks' PING_BODY_LIMIT does by default.
	MaxPingBody = 10_000
	// MaxPingUserAgent bounds the user agent kept.
	MaxPingUserAgent = 200
	// DefaultPingsKept is how many pings a check's log keeps.
	DefaultPingsKept = 100
)

// Apply changes c's state by ping p (at p.At), sets p.Check, p.Seq and
// p.Duration, and returns p. A start opens a run (the oldest is dropped
// beyond MaxOpenRuns; a start of a run ID already open restarts it); a
// success or failure finishes the run of its run ID, if open, sets
// LastPingAt and Failed, and resumes a paused check; a log changes
// nothing but the count. It sets p.Armed.
func (c *Check) Apply(p *Ping) *Ping {
	idle := c.DownAt().IsZero()
	defer func() { p.Armed = idle && !c.DownAt().IsZero() }()
	c.Pings++
	p.Check, p.Seq = c.Name, c.Pings
	switch p.Kind {
	case PingStart:
		c.Runs = slices.DeleteFunc(c.Runs, func(r CheckRun) bool { return r.RID == p.RID })
		c.Runs = append(c.Runs, CheckRun{RID: p.RID, Started: p.At})
		if len(c.Runs) > MaxOpenRuns {
			c.Runs = slices.Delete(c.Runs, 0, len(c.Runs)-MaxOpenRuns)
		}
	case PingSuccess, PingFail:
		c.LastDuration = 0
		if i := slices.IndexFunc(c.Runs, func(r CheckRun) bool { return r.RID == p.RID }); i >= 0 {
			p.Duration = p.At.Sub(c.Runs[i].Started)
			c.LastDuration = p.Duration
			c.Runs = slices.Delete(c.Runs, i, i+1)
		}
		c.LastPingAt, c.Failed, c.Paused = p.At, p.Kind == PingFail, false
	}
	return p
}

// CheckPing returns a *FieldError unless p can be applied.
func CheckPing(p *Ping) error {
	switch {
	case p.Kind != PingSuccess && p.Kind != PingStart && p.Kind != PingFail && p.Kind != PingLog:
		return Invalid("kind", "%q: want success, start, fail or log", p.Kind)
	case p.At.IsZero():
		return Invalid("at", "must be set")
	case len(p.RID) > MaxRIDSize:
		return Invalid("rid", "longer than %d bytes", MaxRIDSize)
	case len(p.Body) > MaxPingBody*3: // MaxPingBody bytes, each possibly replaced by U+FFFD
		return Invalid("body", "longer than %d bytes", MaxPingBody)
	}
	return nil
}

// Subject prefix of a check's incidents.
const SubjectCheck = "check:"

// CheckSubject returns the subject of the check name's incidents.
func CheckSubject(name string) string { return SubjectCheck + name }

// CheckOfSubject returns the check a subject names, if it names one.
func CheckOfSubject(subject string) (string, bool) {
	return strings.CutPrefix(subject, SubjectCheck)
}

type checkJSON struct {
	Name         string           `json:"name"`
	PingID       string           `json:"ping_id"`
	Period       jsondur.Duration `json:"period,omitempty"`
	Cron         string           `json:"cron,omitempty"`
	TimeZone     string           `json:"time_zone,omitempty"`
	Grace        jsondur.Duration `json:"grace"`
	Channels     []string         `json:"channels,omitempty"`
	Paused       bool             `json:"paused,omitempty"`
	CreatedAt    time.Time        `json:"created_at"`
	LastPingAt   time.Time        `json:"last_ping_at,omitzero"`
	Failed       bool             `json:"failed,omitempty"`
	Runs         []CheckRun       `json:"runs,omitempty"`
	LastDuration jsondur.Duration `json:"last_duration,omitempty"`
	Pings        int64            `json:"pings,omitempty"`
}

// MarshalJSON implements json.Marshaler: durations as Go duration
// strings. The SQL stores keep this form.
func (c Check) MarshalJSON() ([]byte, error) {
	return json.Marshal(checkJSON{c.Name, c.PingID, jsondur.Duration(c.Period), c.Cron, c.TimeZone, jsondur.Duration(c.Grace),
		c.Channels, c.Paused, c.CreatedAt, c.LastPingAt, c.Failed, c.Runs, jsondur.Duration(c.LastDuration), c.Pings})
}

// UnmarshalJSON implements json.Unmarshaler; an unknown field is an
// error.
func (c *Check) UnmarshalJSON(b []byte) error {
	var v checkJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return err
	}
	*c = Check{v.Name, v.PingID, v.Period.D(), v.Cron, v.TimeZone, v.Grace.D(), v.Channels, v.Paused, v.CreatedAt,
		v.LastPingAt, v.Failed, v.Runs, v.LastDuration.D(), v.Pings}
	return nil
}

type pingJSON struct {
	Seq        int64            `json:"seq"`
	Check      string           `json:"check"`
	Kind       PingKind         `json:"kind"`
	ExitCode   *int             `json:"exit_code,omitempty"`
	RID        string           `json:"rid,omitempty"`
	At         time.Time        `json:"at"`
	Duration   jsondur.Duration `json:"duration,omitempty"`
	Method     string           `json:"method,omitempty"`
	RemoteAddr string           `json:"remote_addr,omitempty"`
	UserAgent  string           `json:"user_agent,omitempty"`
	Body       string           `json:"body,omitempty"`
	Truncated  bool             `json:"truncated,omitempty"`
}

// MarshalJSON implements json.Marshaler: the duration as a Go duration
// string.
func (p Ping) MarshalJSON() ([]byte, error) {
	return json.Marshal(pingJSON{p.Seq, p.Check, p.Kind, p.ExitCode, p.RID, p.At, jsondur.Duration(p.Duration),
		p.Method, p.RemoteAddr, p.UserAgent, p.Body, p.Truncated})
}

// UnmarshalJSON implements json.Unmarshaler.
func (p *Ping) UnmarshalJSON(b []byte) error {
	var v pingJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = Ping{v.Seq, v.Check, v.Kind, v.ExitCode, v.RID, v.At, v.Duration.D(), v.Method, v.RemoteAddr, v.UserAgent, v.Body, v.Truncated, false}
	return nil
}

// CheckView is what the API, the CLI (--json) and the dashboard show of a
// check at a time: its settings and state, its status, when its next ping
// is due and when it goes down without one, and its ping path — unless
// the ping ID is hidden from whoever reads it (then PingID and PingPath
// are RedactedSecret).
type CheckView struct {
	Name         string           `json:"name"`
	Status       string           `json:"status"`
	PingID       string           `json:"ping_id"`
	PingPath     string           `json:"ping_path"`
	Period       jsondur.Duration `json:"period,omitempty"`
	Cron         string           `json:"cron,omitempty"`
	TimeZone     string           `json:"time_zone,omitempty"`
	Grace        jsondur.Duration `json:"grace"`
	Channels     []string         `json:"channels,omitempty"`
	Paused       bool             `json:"paused,omitempty"`
	CreatedAt    time.Time        `json:"created_at"`
	LastPingAt   time.Time        `json:"last_ping_at,omitzero"`
	Due          time.Time        `json:"due,omitzero"`
	DownAt       time.Time        `json:"down_at,omitzero"`
	Runs         []CheckRun       `json:"runs,omitempty"`
	LastDuration jsondur.Duration `json:"last_duration,omitempty"`
	Pings        int64            `json:"pings"`
}

// View returns c's view at now, with its ping ID if showID.
func (c *Check) View(now time.Time, showID bool) CheckView {
	v := CheckView{Name: c.Name, Status: c.Status(now), PingID: RedactedSecret, PingPath: "/ping/" + RedactedSecret,
		Period: jsondur.Duration(c.Period), Cron: c.Cron, TimeZone: c.TimeZone, Grace: jsondur.Duration(c.Grace),
		Channels: slices.Clone(c.Channels), Paused: c.Paused, CreatedAt: c.CreatedAt, LastPingAt: c.LastPingAt,
		Due: c.Due(), DownAt: c.DownAt(), Runs: slices.Clone(c.Runs), LastDuration: jsondur.Duration(c.LastDuration), Pings: c.Pings}
	if showID {
		v.PingID, v.PingPath = c.PingID, "/ping/"+c.PingID
	}
	return v
}
