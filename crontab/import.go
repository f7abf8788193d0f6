package crontab

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
}

// Change is one thing Import did, or would do with DryRun.
type Change struct {
	Action Action
	// Name is the schedule's.
	Name string
	// Entry is the entry behind it; nil for Remove.
	Entry *Entry
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
// returns what it did (or, with o.DryRun, what it would do), in the order
// of t's entries, then the removals in name order. It changes nothing for
// t's Problems: whether to import a table that has some is the caller's
// choice. A schedule whose definition is unchanged is left alone, so
// importing the same file twice changes nothing the second time; a changed
// one is replaced (AddSchedule with Replace), and paused again if it was.
//
// Import stops at the first error (from the store, or a schedule the
// client refuses, such as a command outside its exec allow-list),
// returning the changes made before it; they are not undone.
func Import(ctx context.Context, c *hopper.Client, t *Table, o ImportOptions) ([]Change, error) {
	var changes []Change
	names := map[string]bool{}
	for _, e := range t.Entries {
		names[e.Name] = true
		so := e.ScheduleOptions(o.Template)
		ch := Change{Action: Create, Name: e.Name, Entry: e}
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
		Jitter: o.Jitter, JitterMode: o.JitterMode, Kind: o.Kind, Args: args,
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
		Jitter: sc.Jitter, JitterMode: sc.JitterMode, Kind: sc.Kind, Args: sc.Args, Options: sc.Options,
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
