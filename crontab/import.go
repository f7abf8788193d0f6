package crontab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
)

// Tag is the tag of every schedule Import creates (and of the jobs they
// fire): "hopper jobs list --tag crontab" lists them.
const Tag = "crontab"

// Action is what Import does, or would do, to a schedule.
type Action string

// The actions of Import.
const (
	// Create: no schedule has the entry's name; one is added.
	Create Action = "create"
	// Update: the schedule of the entry's name differs from what the entry
	// and the template make; it is replaced (its pause kept).
	Update Action = "update"
	// Unchanged: the schedule of the entry's name is what the entry and
	// the template make; it is left alone, its state (pause, last run)
	// kept.
	Unchanged Action = "unchanged"
	// Remove: with ImportOptions.Prune, a schedule with the prefix and the
	// Tag that no entry names; it is removed.
	Remove Action = "remove"
)

// ImportOptions say how Import applies a Table.
type ImportOptions struct {
	// Prefix is the Options.Prefix the Table was parsed with (default
	// DefaultPrefix); Prune uses it.
	Prefix string
	// Template holds the policies and job options of every schedule:
	// Overlap, CatchUp, CatchUpWindow, CatchUpMax, Jitter, JitterMode and
	// Options. Its Cron, TimeZone, Every, FixedDelay, Replace, Kind and
	// Args are ignored: each entry sets them. Tag is added to its tags.
	Template hopper.ScheduleOptions
	// DryRun computes the changes without making any.
	DryRun bool
	// Prune removes the schedules whose names start with Prefix and that
	// carry Tag, but that no entry names: the crontab is then the whole
	// truth about the schedules it made.
	Prune bool
	// Mail, if set, routes the notifications of the schedules of entries
	// with MailTo (parsed with Options.Mail) to email channels; it is
	// required when an entry has MailTo.
	Mail *Mail
}

// MailChannelPrefix starts the names of the email channels Import makes
// for MAILTO lines.
const MailChannelPrefix = "mailto-"

// Mail says where the mail of a crontab's MAILTO lines goes. Cron mails a
// command's output to MAILTO after each run; Hopper keeps every run's
// output with its job (hopper jobs output) and mails, through the
// schedule's notification channels (Monitor.Channels), each run that
// fails for good (a dead job, with the "hopper serve" default of
// notifying dead jobs) and each incident of its monitor (missed start,
// over duration, K failures: the template's Monitor settings).
//
// With Channel, every schedule with MailTo notifies that existing channel.
// Else Import makes (or updates) one email channel per distinct MAILTO
// addresses and sender, named MailChannelPrefix and a slug of the
// addresses ([MailChannelName]), sending through SMTPAddr.
type Mail struct {
	// Channel names an existing channel (of any type) to route to,
	// instead of channels made from the addresses.
	Channel string
	// SMTPAddr is the SMTP server (host:port) of the channels Import
	// makes.
	SMTPAddr string
	// From is the sender of the channels Import makes for entries without
	// a MAILFROM line before them (Entry.MailFrom wins).
	From string
	// Username and Password, if set, authenticate to the SMTP server
	// (PLAIN). An existing channel keeps its password when Password is "".
	Username, Password string
}

// MailChannelName returns the name of the email channel Import makes for
// the addresses to: MailChannelPrefix and their lower-case letters and
// digits, each other run of bytes a "-" ("mailto-ops-example-com"); a
// name over 64 bytes is cut and ends with a hash of the addresses.
func MailChannelName(to []string) string {
	joined := strings.Join(to, ",")
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(joined) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := MailChannelPrefix + strings.TrimRight(b.String(), "-")
	const maxName = 64
	if len(name) > maxName {
		h := fnv.New32a()
		h.Write([]byte(joined))
		name = fmt.Sprintf("%s-%08x", strings.TrimRight(name[:maxName-9], "-"), h.Sum32())
	}
	return name
}

// MailChannel returns the email channel Import makes for e's MailTo with
// m (nil when e has none, or m routes to m.Channel). Its name is
// MailChannelName's; Import adds "-2", "-3"… to the channels of the same
// addresses with another sender.
func (m *Mail) MailChannel(e *Entry) *Channel {
	if len(e.MailTo) == 0 || m.Channel != "" {
		return nil
	}
	return &Channel{Name: MailChannelName(e.MailTo), Type: job.ChannelEmail, SMTPAddr: m.SMTPAddr,
		From: cmp.Or(e.MailFrom, m.From), To: slices.Clone(e.MailTo), Username: m.Username, Password: m.Password}
}

// Channel is a notification channel (hopper.Channel).
type Channel = hopper.Channel

// Change is one thing Import did, or would do with DryRun: to a schedule,
// or to a MAILTO's email channel (Channel set).
type Change struct {
	Action Action
	// Name is the schedule's, or the channel's.
	Name string
	// Entry is the entry behind it (a channel's first); nil for Remove.
	Entry *Entry
	// Channel, for a channel's change, is the channel as Import makes it
	// (with its password: print its Redacted form).
	Channel *Channel
	// MailChannel, for a schedule's change, is the channel its entry's
	// MAILTO notifies ("" for none).
	MailChannel string
	// Paused says the schedule is paused (and stays so after an update).
	Paused bool
}

// ScheduleOptions returns the options of the schedule of e: its cron
// expression and zone, and an exec job of its Args, with the policies and
// job options of template, tagged Tag.
func (e *Entry) ScheduleOptions(template hopper.ScheduleOptions) hopper.ScheduleOptions {
	o := template
	o.Cron, o.TimeZone, o.Every, o.FixedDelay, o.Replace = e.Cron, e.TimeZone, 0, false, false
	o.Kind, o.Args = kinds.KindExec, e.Args()
	var opts hopper.EnqueueOptions
	if template.Options != nil {
		opts = *template.Options
	}
	if !slices.Contains(opts.Tags, Tag) {
		opts.Tags = append(slices.Clone(opts.Tags), Tag)
	}
	o.Options = &opts
	return o
}

// Import makes the schedules of t's entries exist on c, as o says, and
// returns what it did (or, with o.DryRun, what it would do): the email
// channels of the MAILTO lines (see Mail) first, then the schedules in the
// order of t's entries, then the removals in name order. It changes nothing for
// t's Problems: whether to import a table that has some is the caller's
// choice. A schedule whose definition is unchanged is left alone, so
// importing the same file twice changes nothing the second time; a changed
// one is replaced (AddSchedule with Replace), and paused again if it was.
//
// Import stops at the first error (from the store, or a schedule the
// client refuses, such as a command outside its exec allow-list),
// returning the changes made before it; they are not undone.
func Import(ctx context.Context, c *hopper.Client, t *Table, o ImportOptions) ([]Change, error) {
	changes, routes, err := importMail(ctx, c, t, o)
	if err != nil {
		return changes, err
	}
	names := map[string]bool{}
	for _, e := range t.Entries {
		names[e.Name] = true
		so := e.ScheduleOptions(o.Template)
		so.Monitor = withChannel(so.Monitor, routes[e])
		ch := Change{Action: Create, Name: e.Name, Entry: e, MailChannel: routes[e]}
		old, err := c.GetSchedule(ctx, e.Name)
		switch {
		case errors.Is(err, hopper.ErrNotFound):
		case err != nil:
			return changes, fmt.Errorf("crontab: line %d: schedule %s: %w", e.Line, e.Name, err)
		default:
			ch.Paused = old.Paused
			same, err := sameDefinition(old, e.Name, so)
			if err != nil {
				return changes, fmt.Errorf("crontab: line %d: schedule %s: %w", e.Line, e.Name, err)
			}
			ch.Action = Update
			if same {
				ch.Action = Unchanged
			}
		}
		if !o.DryRun && ch.Action != Unchanged {
			so.Replace = ch.Action == Update
			if _, err := c.AddSchedule(ctx, e.Name, so); err != nil {
				return changes, fmt.Errorf("crontab: line %d: schedule %s: %w", e.Line, e.Name, err)
			}
			if ch.Paused {
				if err := c.PauseSchedule(ctx, e.Name); err != nil {
					return changes, fmt.Errorf("crontab: line %d: schedule %s: keep it paused: %w", e.Line, e.Name, err)
				}
			}
		}
		changes = append(changes, ch)
	}
	if !o.Prune {
		return changes, nil
	}
	all, err := c.Schedules(ctx)
	if err != nil {
		return changes, fmt.Errorf("crontab: prune: %w", err)
	}
	slices.SortFunc(all, func(a, b *hopper.Schedule) int { return strings.Compare(a.Name, b.Name) })
	prefix := cmp.Or(o.Prefix, DefaultPrefix)
	for _, sc := range all {
		if names[sc.Name] || !strings.HasPrefix(sc.Name, prefix) || !slices.Contains(sc.Tags, Tag) {
			continue
		}
		if !o.DryRun {
			if err := c.RemoveSchedule(ctx, sc.Name); err != nil && !errors.Is(err, hopper.ErrNotFound) {
				return changes, fmt.Errorf("crontab: prune: schedule %s: %w", sc.Name, err)
			}
		}
		changes = append(changes, Change{Action: Remove, Name: sc.Name, Paused: sc.Paused})
	}
	return changes, nil
}

// withChannel returns a copy of m (a new Monitor if nil) that notifies the
// channel ch too; m itself when ch is "".
func withChannel(m *hopper.Monitor, ch string) *hopper.Monitor {
	if ch == "" {
		return m
	}
	out := &hopper.Monitor{}
	if m != nil {
		out = m.Clone()
	}
	if !slices.Contains(out.Channels, ch) {
		out.Channels = append(out.Channels, ch)
	}
	return out
}

// importMail makes (or, with o.DryRun, plans) the email channels of t's
// entries with MailTo, before any schedule changes: every channel is
// checked first, so a bad one changes nothing. It returns the changes and
// the channel each such entry's schedule notifies.
func importMail(ctx context.Context, c *hopper.Client, t *Table, o ImportOptions) ([]Change, map[*Entry]string, error) {
	routes := map[*Entry]string{}
	var changes []Change
	var want []*Channel
	keys := map[string]string{} // addresses and sender → channel name
	taken := map[string]bool{}
	for _, e := range t.Entries {
		if len(e.MailTo) == 0 {
			continue
		}
		if o.Mail == nil {
			return nil, nil, fmt.Errorf("crontab: line %d: its MAILTO needs ImportOptions.Mail", e.Line)
		}
		if o.Mail.Channel != "" {
			routes[e] = o.Mail.Channel
			continue
		}
		ch := o.Mail.MailChannel(e)
		key := strings.Join(ch.To, ",") + "\n" + ch.From
		if name, ok := keys[key]; ok {
			routes[e] = name
			continue
		}
		base := ch.Name
		for i := 2; taken[ch.Name]; i++ {
			ch.Name = fmt.Sprintf("%s-%d", base, i)
		}
		if err := ch.Check(); err != nil {
			return nil, nil, fmt.Errorf("crontab: line %d: MAILTO channel %s: %w", e.Line, ch.Name, err)
		}
		taken[ch.Name], keys[key], routes[e] = true, ch.Name, ch.Name
		want = append(want, ch)
		changes = append(changes, Change{Action: Create, Name: ch.Name, Entry: e, Channel: ch})
	}
	if o.Mail != nil && o.Mail.Channel != "" && len(routes) > 0 {
		if _, err := c.Channel(ctx, o.Mail.Channel); err != nil {
			return nil, nil, fmt.Errorf("crontab: mail channel %s: %w", o.Mail.Channel, err)
		}
	}
	for i, ch := range want {
		old, err := c.Channel(ctx, ch.Name)
		switch {
		case errors.Is(err, hopper.ErrNotFound):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("crontab: channel %s: %w", ch.Name, err)
		case old.Type != job.ChannelEmail:
			return nil, nil, fmt.Errorf("crontab: line %d: channel %s exists and is a %s channel, not the email channel of its MAILTO: rename it, or route the mail to a channel of yours with Mail.Channel (--mail-channel)", changes[i].Entry.Line, ch.Name, old.Type)
		}
		if ch.Password == "" && ch.Username == old.Username {
			ch.Password = old.Password
		}
		changes[i].Action = Update
		if sameChannel(old, ch) {
			changes[i].Action = Unchanged
		}
	}
	for _, ch := range changes {
		if o.DryRun || ch.Action == Unchanged {
			continue
		}
		if err := c.SetChannel(ctx, *ch.Channel); err != nil {
			return nil, nil, fmt.Errorf("crontab: line %d: MAILTO channel %s: %w", ch.Entry.Line, ch.Name, err)
		}
	}
	return changes, routes, nil
}

// sameChannel reports whether the channel a is b, leaving out when it
// was made (a nil list is an empty one, as a store may return either).
func sameChannel(a, b *Channel) bool {
	return a.Name == b.Name && a.Type == b.Type && a.URL == b.URL && a.Secret == b.Secret && a.SMTPAddr == b.SMTPAddr &&
		a.From == b.From && slices.Equal(a.To, b.To) && a.Username == b.Username && a.Password == b.Password &&
		slices.Equal(a.Command, b.Command) && a.All == b.All && slices.Equal(a.Events, b.Events)
}

// sameDefinition reports whether the stored schedule old is what AddSchedule
// would store for name and o, leaving out its state (pause, times,
// counters). Args are compared as JSON values, as a store may reorder
// their keys.
func sameDefinition(old *hopper.Schedule, name string, o hopper.ScheduleOptions) (bool, error) {
	args, err := json.Marshal(o.Args)
	if err != nil {
		return false, err
	}
	var opts hopper.EnqueueOptions
	if o.Options != nil {
		opts = *o.Options
	}
	want := &job.Schedule{
		Name: name, Spec: o.Cron, TimeZone: o.TimeZone, Overlap: o.Overlap,
		CatchUp: o.CatchUp, CatchUpWindow: o.CatchUpWindow, CatchUpMax: o.CatchUpMax,
		Jitter: o.Jitter, JitterMode: o.JitterMode, Monitor: o.Monitor, OutputRetention: o.OutputRetention,
		Kind: o.Kind, Args: args,
		Options: job.Options{Queue: opts.Queue, Priority: opts.Priority, MaxAttempts: opts.MaxAttempts,
			Timeout: opts.Timeout, Retry: opts.Retry, Meta: opts.Meta, Tags: opts.Tags},
	}
	a, err := definition(old)
	if err != nil {
		return false, err
	}
	b, err := definition(want)
	if err != nil {
		return false, err
	}
	return reflect.DeepEqual(a, b), nil
}

// definition is sc without its state, as a JSON value.
func definition(sc *hopper.Schedule) (any, error) {
	d := job.Schedule{
		Name: sc.Name, Spec: sc.Spec, TimeZone: sc.TimeZone, FixedDelay: sc.FixedDelay, Overlap: sc.Overlap,
		CatchUp: sc.CatchUp, CatchUpWindow: sc.CatchUpWindow, CatchUpMax: sc.CatchUpMax,
		Jitter: sc.Jitter, JitterMode: sc.JitterMode, Monitor: sc.Monitor, OutputRetention: sc.OutputRetention,
		Kind: sc.Kind, Args: sc.Args, Options: sc.Options,
	}
	b, err := json.Marshal(&d)
	if err != nil {
		return nil, err
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return v, nil
}
