package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper/internal/jsondur"
)

// Monitor is what a schedule's monitor watches (Schedule.Monitor). The
// maintenance leader evaluates it from the store's state — the schedule's
// next tick, its last job, its latest finished runs — so that it holds
// across processes and restarts. Each problem it finds is an Incident,
// opened once and resolved once. A zero field watches nothing.
type Monitor struct {
	// StartGrace: a tick's job must start within this long after it may
	// run (its tick, plus the schedule's jitter delay if any); a tick not
	// fired at its time (no server firing schedules) counts too. At least
	// MinStartGrace when set.
	StartGrace time.Duration
	// MaxDuration: a run must finish within this long after its attempt
	// started. At least one second when set.
	MaxDuration time.Duration
	// AlertAfterFailures: K consecutive runs ended dead (a completed run
	// ends the incident). At most MaxAlertAfterFailures.
	AlertAfterFailures int
	// PauseOnFailures pauses the schedule when its failures incident opens
	// (needs AlertAfterFailures); resuming it is the operator's decision.
	PauseOnFailures bool
	// Channels names the notification channels (Channel) this schedule's
	// incidents go to, besides the channels that take every subject
	// (Channel.All).
	Channels []string
}

// Bounds of a Monitor.
const (
	MinStartGrace         = time.Second
	MaxAlertAfterFailures = 1000
	// MaxMonitorChannels bounds Monitor.Channels.
	MaxMonitorChannels = 100
)

// Bounds of a Channel, checked by Channel.Check: a channel is kept in the
// store and read by every notification job, so that each field has a
// size an honest configuration never reaches.
const (
	// MaxChannelURLSize bounds URL and SMTPAddr, in bytes.
	MaxChannelURLSize = 8 << 10
	// MaxChannelSecretSize bounds Secret, Username and Password, in bytes.
	MaxChannelSecretSize = 4 << 10
	// MaxMailAddrSize bounds From and each of To, in bytes (RFC 5321
	// allows 256 for a path).
	MaxMailAddrSize = 320
	// MaxRecipients bounds To.
	MaxRecipients = 100
	// MaxCommandArgs bounds Command (the program and its arguments), and
	// MaxCommandSize their total size in bytes.
	MaxCommandArgs = 1000
	MaxCommandSize = 64 << 10
)

// Check returns a *FieldError (on field.start_grace, …) unless m is valid.
func (m *Monitor) Check(field string) error {
	switch {
	case m.StartGrace < 0 || m.StartGrace > 0 && m.StartGrace < MinStartGrace:
		return Invalid(field+".start_grace", "must be 0 (not watched) or at least %s, got %s", MinStartGrace, m.StartGrace)
	case m.MaxDuration < 0 || m.MaxDuration > 0 && m.MaxDuration < time.Second:
		return Invalid(field+".max_duration", "must be 0 (not watched) or at least 1s, got %s", m.MaxDuration)
	case m.AlertAfterFailures < 0 || m.AlertAfterFailures > MaxAlertAfterFailures:
		return Invalid(field+".alert_after_failures", "must be between 0 (not watched) and %d, got %d", MaxAlertAfterFailures, m.AlertAfterFailures)
	case m.PauseOnFailures && m.AlertAfterFailures == 0:
		return Invalid(field+".pause_on_failures", "needs alert_after_failures")
	}
	if len(m.Channels) > MaxMonitorChannels {
		return Invalid(field+".channels", "%d channels, more than the limit of %d", len(m.Channels), MaxMonitorChannels)
	}
	for i, c := range m.Channels {
		if err := CheckName(fmt.Sprintf("%s.channels[%d]", field, i), c); err != nil {
			return err
		}
	}
	return nil
}

// Active reports whether m watches anything.
func (m *Monitor) Active() bool {
	return m != nil && (m.StartGrace > 0 || m.MaxDuration > 0 || m.AlertAfterFailures > 0)
}

// Clone returns a deep copy of m (nil for nil).
func (m *Monitor) Clone() *Monitor {
	if m == nil {
		return nil
	}
	c := *m
	c.Channels = slices.Clone(m.Channels)
	return &c
}

type monitorJSON struct {
	StartGrace         jsondur.Duration `json:"start_grace,omitempty"`
	MaxDuration        jsondur.Duration `json:"max_duration,omitempty"`
	AlertAfterFailures int              `json:"alert_after_failures,omitempty"`
	PauseOnFailures    bool             `json:"pause_on_failures,omitempty"`
	Channels           []string         `json:"channels,omitempty"`
}

// MarshalJSON implements json.Marshaler: durations as Go duration strings.
// The SQL stores keep this form too.
func (m Monitor) MarshalJSON() ([]byte, error) {
	return json.Marshal(monitorJSON{jsondur.Duration(m.StartGrace), jsondur.Duration(m.MaxDuration), m.AlertAfterFailures, m.PauseOnFailures, m.Channels})
}

// UnmarshalJSON implements json.Unmarshaler; an unknown field is an
// error.
func (m *Monitor) UnmarshalJSON(b []byte) error {
	var v monitorJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return err
	}
	*m = Monitor{v.StartGrace.D(), v.MaxDuration.D(), v.AlertAfterFailures, v.PauseOnFailures, v.Channels}
	return nil
}

// Problem is what an incident is about. Its values are stored as text.
type Problem string

// The problems a monitor finds.
const (
	// ProblemMissedStart: a tick's job did not start within the grace.
	ProblemMissedStart Problem = "missed_start"
	// ProblemOverDuration: a run has been running longer than its maximum.
	ProblemOverDuration Problem = "over_duration"
	// ProblemFailing: the schedule's latest K runs ended dead.
	ProblemFailing Problem = "failing"
	// ProblemCheckDown: an external check is down (Check.Status).
	ProblemCheckDown Problem = "check_down"
)

// Valid reports whether p is one of the Problem constants.
func (p Problem) Valid() bool {
	return p == ProblemMissedStart || p == ProblemOverDuration || p == ProblemFailing || p == ProblemCheckDown
}

// Subjects of incidents: what is down. A schedule's is "schedule:" and its
// name; an external check's is "check:" and its name (SubjectCheck).
const SubjectSchedule = "schedule:"

// ScheduleSubject returns the subject of the schedule name's incidents.
func ScheduleSubject(name string) string { return SubjectSchedule + name }

// ScheduleOfSubject returns the schedule a subject names, if it names one.
func ScheduleOfSubject(subject string) (string, bool) {
	return strings.CutPrefix(subject, SubjectSchedule)
}

// Incident is one problem of one subject, from the moment the monitor
// found it (OpenedAt: "down") to the moment it ended (ResolvedAt: "up";
// zero while open). A subject has at most one open incident per problem.
type Incident struct {
	ID      int64   `json:"id"`
	Subject string  `json:"subject"`
	Problem Problem `json:"problem"`
	// Job is the job concerned when there is one (the late, long or last
	// failed run).
	Job        ID        `json:"job,omitempty"`
	Detail     string    `json:"detail,omitempty"`
	OpenedAt   time.Time `json:"opened_at"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}

// Open reports whether the incident is not resolved yet.
func (i *Incident) Open() bool { return i.ResolvedAt.IsZero() }

// ChannelType is the medium of a notification channel. Its values are
// stored as text.
type ChannelType string

// The channel types.
const (
	ChannelWebhook ChannelType = "webhook" // a JSON POST, signed with HMAC-SHA256
	ChannelSlack   ChannelType = "slack"   // a Slack incoming webhook
	ChannelEmail   ChannelType = "email"   // a mail through an SMTP server
	ChannelCommand ChannelType = "command" // a program run with the notification on its stdin
)

// Channel is where notifications go: a named destination, configured per
// server (kept in the store) and routed per schedule (Monitor.Channels) or
// for every subject (All). Secret and Password are secrets: the API and
// the dashboard never show them (Redacted).
type Channel struct {
	Name string      `json:"name"`
	Type ChannelType `json:"type"`
	// URL is where webhook and slack channels POST (http or https, under
	// the server's outbound policy).
	URL string `json:"url,omitempty"`
	// Secret is the webhook channel's HMAC-SHA256 key.
	Secret string `json:"secret,omitempty"`
	// SMTP: the email channel's server (host:port), sender, recipients
	// and, if set, PLAIN authentication.
	SMTPAddr string   `json:"smtp_addr,omitempty"`
	From     string   `json:"from,omitempty"`
	To       []string `json:"to,omitempty"`
	Username string   `json:"username,omitempty"`
	Password string   `json:"password,omitempty"`
	// Command is the command channel's program and arguments; it gets the
	// notification as JSON on its stdin, under the exec kind's policy.
	Command []string `json:"command,omitempty"`
	// All sends this channel the notifications of every subject (and
	// every dead job), not only those of the schedules naming it.
	All bool `json:"all,omitempty"`
	// Events, if not empty, are the only notification events this
	// channel takes (NotifyEvent values).
	Events    []string  `json:"events,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Clone returns a deep copy of c.
func (c *Channel) Clone() *Channel {
	o := *c
	o.To, o.Command, o.Events = slices.Clone(c.To), slices.Clone(c.Command), slices.Clone(c.Events)
	return &o
}

// Redacted returns a copy of c without its secrets: Secret and Password
// are "" if unset and RedactedSecret if set; a Slack channel's URL, whose
// path is its token, keeps only its scheme and host, and a webhook's URL
// loses its user information and query (where tokens go), each replaced
// by RedactedSecret.
func (c *Channel) Redacted() *Channel {
	o := c.Clone()
	for _, s := range []*string{&o.Secret, &o.Password} {
		if *s != "" {
			*s = RedactedSecret
		}
	}
	o.URL = redactURL(c.Type, c.URL)
	return o
}

func redactURL(t ChannelType, s string) string {
	u, err := url.Parse(s)
	if err != nil || s == "" {
		return s
	}
	switch {
	case t == ChannelSlack && (u.Path != "" || u.RawQuery != ""):
		return u.Scheme + "://" + u.Host + "/" + RedactedSecret
	case t == ChannelWebhook:
		if u.User != nil {
			u.User = url.User(RedactedSecret)
		}
		if u.RawQuery != "" {
			u.RawQuery = RedactedSecret
		}
		return u.String()
	}
	return s
}

// Unredact returns c with the secrets a Redacted copy of stored hid put
// back: a Secret or Password of RedactedSecret, and a URL equal to the
// redacted one, become stored's (an edit that kept them). Others stay.
func (c Channel) Unredact(stored *Channel) Channel {
	if stored == nil {
		return c
	}
	if c.Secret == RedactedSecret {
		c.Secret = stored.Secret
	}
	if c.Password == RedactedSecret {
		c.Password = stored.Password
	}
	if c.URL != "" && c.URL != stored.URL && c.URL == redactURL(stored.Type, stored.URL) {
		c.URL = stored.URL
	}
	return c
}

// RedactedSecret stands for a secret in a Redacted channel.
const RedactedSecret = "(set)"

// Takes reports whether c takes a notification of event.
func (c *Channel) Takes(event string) bool {
	return len(c.Events) == 0 || slices.Contains(c.Events, event)
}

// Check returns a *FieldError unless c is a valid channel: its fields
// within their bounds (MaxChannelURLSize…), in valid UTF-8 without NUL
// (which no store keeps alike), its URL a URL. A message quotes at most
// the start of a value, and never a secret.
func (c *Channel) Check() error {
	if err := CheckName("name", c.Name); err != nil {
		return err
	}
	if err := c.checkText(); err != nil {
		return err
	}
	switch c.Type {
	case ChannelWebhook, ChannelSlack:
		u, err := url.Parse(c.URL)
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") || err != nil || u.Host == "" {
			return Invalid("url", "want an http or https URL with a host, got %s", clip(redactURL(c.Type, c.URL)))
		}
	case ChannelEmail:
		if c.SMTPAddr == "" || !strings.Contains(c.SMTPAddr, ":") {
			return Invalid("smtp_addr", "want host:port, got %s", clip(c.SMTPAddr))
		}
		if c.From == "" {
			return Invalid("from", "missing: the sender's address")
		}
		switch {
		case len(c.To) == 0:
			return Invalid("to", "missing: at least one recipient")
		case len(c.To) > MaxRecipients:
			return Invalid("to", "%d recipients, more than the limit of %d", len(c.To), MaxRecipients)
		}
		for i, a := range append([]string{c.From}, c.To...) {
			field := "from"
			if i > 0 {
				field = fmt.Sprintf("to[%d]", i-1)
			}
			switch {
			case len(a) > MaxMailAddrSize:
				return Invalid(field, "%d bytes, longer than the limit of %d", len(a), MaxMailAddrSize)
			case strings.ContainsAny(a, "\r\n<>") || !strings.Contains(a, "@"):
				return Invalid(field, "%s is not a mail address", clip(a))
			}
		}
	case ChannelCommand:
		if len(c.Command) == 0 || c.Command[0] == "" {
			return Invalid("command", "missing: the program to run")
		}
	default:
		return Invalid("type", "%s: want webhook, slack, email or command", clip(string(c.Type)))
	}
	if c.Type != ChannelWebhook && c.Secret != "" {
		return Invalid("secret", "applies to webhook channels only")
	}
	for i, e := range c.Events {
		switch {
		case !slices.Contains(NotifyEvents, e):
			return Invalid(fmt.Sprintf("events[%d]", i), "%s: want %s", clip(e), strings.Join(NotifyEvents, ", "))
		case slices.Contains(c.Events[:i], e):
			return Invalid(fmt.Sprintf("events[%d]", i), "%s is listed twice", e)
		}
	}
	return nil
}

// checkText checks the sizes and the text of c's fields (Check).
func (c *Channel) checkText() error {
	size := func(field, s string, limit int) error {
		if len(s) > limit {
			return Invalid(field, "%d bytes, longer than the limit of %d", len(s), limit)
		}
		return text(field, s)
	}
	for _, f := range []struct {
		field, s string
		limit    int
	}{
		{"url", c.URL, MaxChannelURLSize}, {"smtp_addr", c.SMTPAddr, MaxChannelURLSize},
		{"secret", c.Secret, MaxChannelSecretSize}, {"username", c.Username, MaxChannelSecretSize},
		{"password", c.Password, MaxChannelSecretSize}, {"from", c.From, MaxMailAddrSize},
	} {
		if err := size(f.field, f.s, f.limit); err != nil {
			return err
		}
	}
	if len(c.Command) > MaxCommandArgs {
		return Invalid("command", "%d arguments, more than the limit of %d", len(c.Command), MaxCommandArgs)
	}
	total := 0
	for i, a := range c.Command {
		if total += len(a); total > MaxCommandSize {
			return Invalid("command", "more than the limit of %d bytes in all", MaxCommandSize)
		}
		if err := text(fmt.Sprintf("command[%d]", i), a); err != nil {
			return err
		}
	}
	if len(c.Events) > len(NotifyEvents) {
		return Invalid("events", "%d events, more than the %d there are", len(c.Events), len(NotifyEvents))
	}
	for i, a := range c.To {
		if err := size(fmt.Sprintf("to[%d]", i), a, MaxMailAddrSize); err != nil {
			return err
		}
	}
	return nil
}

// text refuses s unless it is valid UTF-8 without NUL.
func text(field, s string) error {
	switch {
	case !utf8.ValidString(s):
		return Invalid(field, "not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return Invalid(field, "holds a NUL byte")
	}
	return nil
}

// clip quotes s for a message, at most its first 64 bytes.
func clip(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "…"
}

// The events a notification reports (Channel.Events): the monitor's
// problems (a check down included), a dead job, and a catch-up over its
// cap.
const (
	NotifyJobDead      = "job_dead"
	NotifyCatchUpCap   = "catch_up_over_cap"
	NotifyMissedStart  = string(ProblemMissedStart)
	NotifyOverDuration = string(ProblemOverDuration)
	NotifyFailing      = string(ProblemFailing)
	NotifyCheckDown    = string(ProblemCheckDown)
)

// NotifyEvents lists the notification events.
var NotifyEvents = []string{NotifyMissedStart, NotifyOverDuration, NotifyFailing, NotifyJobDead, NotifyCatchUpCap, NotifyCheckDown}

// Notification is what a channel is sent, the args of a notification job
// besides the channel's name.
type Notification struct {
	// Event is one of NotifyEvents.
	Event string `json:"event"`
	// Status is "down" when an incident opens, "up" when it is resolved,
	// and "event" for what has no incident (a dead job, a catch-up over
	// its cap).
	Status   string    `json:"status"`
	Subject  string    `json:"subject,omitempty"`
	Schedule string    `json:"schedule,omitempty"`
	Check    string    `json:"check,omitempty"`
	Job      ID        `json:"job,omitempty"`
	Incident int64     `json:"incident,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	At       time.Time `json:"at"`
}

// Statuses of a Notification.
const (
	StatusDown  = "down"
	StatusUp    = "up"
	StatusEvent = "event"
)

// Summary returns a one-line text of n for people (Slack, a mail's
// subject).
func (n *Notification) Summary() string {
	what := n.Subject
	if what == "" && n.Job != 0 {
		what = fmt.Sprintf("job %d", n.Job)
	}
	s := fmt.Sprintf("[hopper] %s %s: %s", strings.ToUpper(n.Status), what, n.Event)
	if n.Detail != "" {
		s += " — " + n.Detail
	}
	return s
}

// Route returns the names of the channels, of chans, that take a
// notification of event about a subject routed to the channels named:
// those named and those taking every subject (All), if they take event.
func Route(chans []*Channel, named []string, event string) []string {
	var out []string
	for _, c := range chans {
		if (c.All || slices.Contains(named, c.Name)) && c.Takes(event) {
			out = append(out, c.Name)
		}
	}
	return out
}

// String describes m for people, in one line: what it watches ("start
// within 5m, finish within 1h, alert after 3 consecutive failures and
// pause"; "no checks" when nothing), then the channels it names
// ("; notify ops, mailto-ops-example-com"), which take its incidents and
// its dead jobs. A nil m is "no checks".
func (m *Monitor) String() string {
	if m == nil {
		return "no checks"
	}
	var parts []string
	if m.StartGrace > 0 {
		parts = append(parts, "start within "+shortDuration(m.StartGrace))
	}
	if m.MaxDuration > 0 {
		parts = append(parts, "finish within "+shortDuration(m.MaxDuration))
	}
	if m.AlertAfterFailures > 0 {
		s := fmt.Sprintf("alert after %d consecutive failures", m.AlertAfterFailures)
		if m.AlertAfterFailures == 1 {
			s = "alert after 1 failure"
		}
		if m.PauseOnFailures {
			s += " and pause"
		}
		parts = append(parts, s)
	}
	s := strings.Join(parts, ", ")
	if s == "" {
		s = "no checks"
	}
	if len(m.Channels) > 0 {
		s += "; notify " + strings.Join(m.Channels, ", ")
	}
	return s
}

// shortDuration writes d without its zero units: "5m", "1h30m", "90s" →
// "1m30s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
