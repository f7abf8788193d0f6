package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/schedule"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) scheduleCmd() *cobra.Command {
	c := group("schedule", "Recurring schedules: add, list, get, next, run, pause, resume, rm",
		a.scheduleAddCmd(), a.scheduleListCmd(), a.scheduleGetCmd(), a.scheduleNextCmd(), a.scheduleRunCmd(), a.scheduleBackfillCmd(),
		a.scheduleSetCmd("pause", "Stop a schedule from firing until resumed"),
		a.scheduleSetCmd("resume", "Let a paused schedule fire again (missed ticks are not replayed)"),
		a.scheduleSetCmd("rm", "Delete a schedule (the jobs it fired are kept)"))
	c.Long = `Recurring schedules fire an ordinary job (with retries and the dead-letter
queue) on a cron expression or at a fixed interval, while "hopper serve" runs.
A tick is never fired twice, even by several servers on one database; ticks
missed while no server ran fire once when one starts.`
	return c
}

// scheduleFlags are schedule add's own flags.
type scheduleFlags struct {
	cron, tz   string
	every      time.Duration
	fixedDelay bool
	replace    bool
	policyFlags
}

func (f *scheduleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cron, "cron", "", `cron expression: 5 fields (minute first), 6 with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly`)
	fs.StringVar(&f.tz, "tz", "", "IANA time zone the cron expression is read in (default UTC), e.g. Europe/Paris")
	fs.DurationVar(&f.every, "every", 0, fmt.Sprintf("fire at this fixed rate instead of --cron, e.g. 5m (at least %s)", schedule.MinInterval))
	fs.BoolVar(&f.fixedDelay, "fixed-delay", false, "with --every: count the interval from the end of the previous run")
	f.policyFlags.register(fs)
	fs.BoolVar(&f.replace, "replace", false, "replace a schedule of the same name instead of failing")
}

// policyFlags are the policies and job options of a schedule, which
// schedule add and crontab import share.
type policyFlags struct {
	overlap, catchUp string
	catchUpWindow    time.Duration
	catchUpMax       int
	jitter           time.Duration
	jitterMode       string
	keepSucceeded    int
	keepFailed       int
	keepFor          time.Duration
	job              jobFlags
	// The monitor's.
	startGrace, maxDuration time.Duration
	alertAfter              int
	pauseOnFailures         bool
	notify                  []string
}

func (f *policyFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.overlap, "overlap", "skip", "when a tick comes while the previous run is unfinished: skip the tick, allow it, cancel the previous run (SIGTERM) and fire, terminate it (SIGKILL) and fire, buffer-one (run it when the previous ends; one at most), or buffer-all (run each in order)")
	fs.StringVar(&f.catchUp, "catch-up", "one", "ticks missed while no server ran: one (a run for the earliest), none, latest, or all (within --catch-up-window, at most --catch-up-max runs)")
	fs.DurationVar(&f.catchUpWindow, "catch-up-window", 0, "with --catch-up all: how far back missed ticks run (default 24h, at most 168h)")
	fs.IntVar(&f.catchUpMax, "catch-up-max", 0, "with --catch-up all: at most this many runs, the latest ticks (default 100, at most 10000); the rest are logged as not run")
	fs.DurationVar(&f.jitter, "jitter", 0, "delay each tick's job by up to this much (at most 24h, never past the next tick)")
	fs.StringVar(&f.jitterMode, "jitter-mode", "random", "random (a new delay each tick) or stable (one delay per schedule, from its name)")
	fs.DurationVar(&f.startGrace, "start-grace", 0, "monitor: alert when a tick's job has not started this long after its tick (at least 1s)")
	fs.DurationVar(&f.maxDuration, "max-duration", 0, "monitor: alert when a run takes longer than this")
	fs.IntVar(&f.alertAfter, "alert-after-failures", 0, "monitor: alert after this many consecutive dead runs")
	fs.BoolVar(&f.pauseOnFailures, "pause-on-failures", false, "monitor: with --alert-after-failures, also pause the schedule then")
	fs.StringArrayVar(&f.notify, "notify", nil, "monitor: send this schedule's alerts to this channel (repeatable; see hopper channel), besides the channels taking all")
	fs.IntVar(&f.keepSucceeded, "keep-succeeded", 0, "keep the output of this many of its newest successful runs (default 3; -1: none)")
	fs.IntVar(&f.keepFailed, "keep-failed", 0, "keep the output of this many of its newest failed runs (default 10; -1: none)")
	fs.DurationVar(&f.keepFor, "keep-output-for", 0, "keep no run's output longer than this (default: no limit but the job's own retention)")
	f.job.register(fs, true)
}

// document sets the fields of d that the flags in fs give.
func (f *policyFlags) document(fs *pflag.FlagSet, d *wire.Schedule) {
	d.Options = f.job.document(fs).Options
	d.Overlap, d.CatchUp, d.CatchUpMax = &f.overlap, &f.catchUp, f.catchUpMax
	if fs.Changed("jitter") {
		d.Jitter = (*wire.Duration)(&f.jitter)
	}
	if fs.Changed("jitter-mode") {
		d.JitterMode = &f.jitterMode
	}
	if fs.Changed("catch-up-window") {
		d.CatchUpWindow = (*wire.Duration)(&f.catchUpWindow)
	}
	if f.startGrace != 0 || f.maxDuration != 0 || f.alertAfter != 0 || f.pauseOnFailures || len(f.notify) > 0 {
		d.Monitor = &hopper.Monitor{StartGrace: f.startGrace, MaxDuration: f.maxDuration, AlertAfterFailures: f.alertAfter,
			PauseOnFailures: f.pauseOnFailures, Channels: f.notify}
	}
	if fs.Changed("keep-succeeded") || fs.Changed("keep-failed") || fs.Changed("keep-output-for") {
		d.OutputRetention = &wire.OutputRetention{Succeeded: f.keepSucceeded, Failed: f.keepFailed}
		if fs.Changed("keep-output-for") {
			d.OutputRetention.MaxAge = (*wire.Duration)(&f.keepFor)
		}
	}
}

const scheduleAddUse = "add NAME (--cron EXPR [--tz ZONE] | --every D [--fixed-delay]) [flags] (exec [exec flags] -- COMMAND [ARGS...] | http --url URL [http flags])"

func (a *app) scheduleAddCmd() *cobra.Command {
	var f scheduleFlags
	c := &cobra.Command{
		Use:   scheduleAddUse,
		Short: "Add a recurring schedule of an exec or http job",
		Long: `Add a recurring schedule named NAME that fires an exec or http job. The flags
of the job kind (see "hopper enqueue exec --help" and "hopper enqueue http
--help") go after the kind; everything after "--" is the command.`,
		Example: `  hopper schedule add nightly-backup --cron '0 3 * * *' --tz Europe/Paris exec -- /usr/local/bin/backup.sh
  hopper schedule add ping --every 30s --max-attempts 1 http --url https://example.com/health
  hopper schedule add report --every 1h --fixed-delay --queue reports --replace exec -- ./report.sh`,
		DisableFlagParsing: true, // NAME comes before the kind; see parseScheduleAdd
		RunE: func(cmd *cobra.Command, args []string) error {
			name, kind, jobArgs, help, err := parseScheduleAdd(cmd, &f, args)
			if help != nil {
				return help()
			}
			if err != nil {
				return err
			}
			return a.scheduleAdd(cmd.Context(), cmd.Flags(), name, kind, jobArgs, &f)
		},
	}
	f.register(c.Flags())
	return c
}

// parseScheduleAdd parses "NAME [flags] KIND [kind flags] [-- COMMAND...]":
// cobra cannot, as NAME comes before the kind. It returns a help printer
// if help was asked for.
func parseScheduleAdd(cmd *cobra.Command, f *scheduleFlags, args []string) (name, kind string, jobArgs any, help func() error, err error) {
	cmd.InheritedFlags() // merges --db and --json into cmd.Flags()
	fs := cmd.Flags()
	fs.SetInterspersed(false)
	fs.SetOutput(io.Discard)
	var pos []string
	rest := args
	for len(pos) < 2 {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, pflag.ErrHelp) {
				return "", "", nil, cmd.Help, nil
			}
			return "", "", nil, nil, usageError{err}
		}
		if h, _ := fs.GetBool("help"); h {
			return "", "", nil, cmd.Help, nil
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		if rest[0] == "--" { // pflag keeps a "--" it did not consume itself
			rest = rest[1:]
			continue
		}
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if len(pos) < 2 {
		return "", "", nil, nil, usagef("schedule add needs a NAME and a job kind: %s", scheduleAddUse)
	}
	name, kind = pos[0], pos[1]
	kf := newKindFlags(kind)
	if kf == nil {
		if newKindFlags(name) != nil { // schedule add exec … : the NAME left out?
			return "", "", nil, nil, usagef("unknown job kind %q: want exec or http (%q was taken as the schedule's NAME: %s)", kind, name, scheduleAddUse)
		}
		return "", "", nil, nil, usagef("unknown job kind %q: want exec or http", kind)
	}
	kfs := pflag.NewFlagSet(kind, pflag.ContinueOnError)
	kfs.SetOutput(io.Discard)
	kfs.SetInterspersed(kind != "exec")
	kf.register(kfs)
	if err := kfs.Parse(rest); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return "", "", nil, func() error {
				fmt.Fprintf(cmd.OutOrStdout(), "Flags of the %s kind:\n%s", kind, kfs.FlagUsages())
				return nil
			}, nil
		}
		return "", "", nil, nil, usageError{fmt.Errorf("%s: %w", kind, err)}
	}
	jobArgs, err = kf.args(kfs.Args())
	return name, kind, jobArgs, nil, err
}

func (a *app) scheduleAdd(ctx context.Context, fs *pflag.FlagSet, name, kind string, jobArgs any, f *scheduleFlags) error {
	if !fs.Changed("cron") && !fs.Changed("every") {
		return usagef("give --cron EXPR or --every D")
	}
	d := wire.Schedule{Name: name, FixedDelay: f.fixedDelay, Replace: f.replace, Kind: kind}
	f.policyFlags.document(fs, &d)
	if fs.Changed("cron") {
		d.Cron = &f.cron
	}
	if fs.Changed("tz") {
		d.TimeZone = &f.tz
	}
	if fs.Changed("every") {
		d.Every = (*wire.Duration)(&f.every)
	}
	o, err := d.ScheduleOptions()
	if err != nil {
		return flagError(fs, err)
	}
	o.Args = jobArgs
	return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
		sc, err := s.AddSchedule(ctx, name, o)
		switch {
		case errors.Is(err, hopper.ErrDuplicate):
			return fmt.Errorf("schedule %q already exists (use --replace to replace it)", name)
		case err != nil:
			return scheduleError(fs, err, f)
		}
		v := newScheduleView(sc)
		if a.json {
			return printJSON(a.Out, v)
		}
		verb := "added"
		if f.replace {
			verb = "saved"
		}
		fmt.Fprintf(a.Out, "schedule %s %s: %s, overlap %s; next run %s (%s)\n", name, verb, describeSpec(sc), sc.Overlap,
			sc.NextRunAt.In(v.loc).Format("2006-01-02 15:04:05 MST"), relative(sc.NextRunAt))
		fmt.Fprintf(a.Out, "%s\n", describeTimeout(sc))
		return nil
	})
}

// scheduleError names the flag behind an invalid schedule's field (the
// library names the fields of hopper.ScheduleOptions and job.Schedule).
func scheduleError(fs *pflag.FlagSet, err error, f *scheduleFlags) error {
	var fe *hopper.FieldError
	if errors.As(err, &fe) && (fe.Field == "spec" || fe.Field == "next_run_at") {
		flag := "--cron"
		if f.cron == "" {
			flag = "--every"
		}
		return usagef("bad %s: %s", flag, fe.Reason)
	}
	return flagError(fs, err)
}

// describeSpec says when a schedule fires.
func describeSpec(sc *hopper.Schedule) string {
	s := sc.Spec
	if d, ok := strings.CutPrefix(s, "@every "); ok {
		s = "every " + d
		if sc.FixedDelay {
			s += " after each run"
		}
	}
	if sc.TimeZone != "" {
		s += " (" + sc.TimeZone + ")"
	}
	return s
}

func (a *app) scheduleListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the schedules with their next fire times and last jobs",
		Long: `List the schedules: name, rule, overlap policy, status, next and last fire
time (in the schedule's time zone: a cron schedule's --tz, else UTC; local
time for --every), the ticks skipped since it last fired (with overlap
skip, a tick is skipped while the previous job runs) and when the last was
skipped, the last job with its outcome (its state, and a short error
when it failed or died), and its monitor: what it checks (--start-grace,
--max-duration, --alert-after-failures, --pause-on-failures) and the
channels it notifies (--notify). "hopper schedule get NAME" shows one
schedule whole, with the outputs it keeps and its open incidents.

--json prints the schedules with their times in their zone (monitor and
output_retention as set), and adds last_job_state, last_job_error,
job_timeout (what the next job it fires gets when the schedule sets no
--timeout: the period, at least 1m) and output_kept (output_retention with
its defaults applied).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				scheds, err := s.Schedules(ctx)
				if err != nil {
					return err
				}
				views := make([]*scheduleView, 0, len(scheds))
				for _, sc := range scheds {
					v := newScheduleView(sc)
					if err := v.addLastJob(ctx, s); err != nil {
						return err
					}
					views = append(views, v)
				}
				if a.json {
					return printJSON(a.Out, views)
				}
				if len(views) == 0 {
					fmt.Fprintln(a.Err, "no schedules")
					return nil
				}
				t := newTable(a.Out, "NAME", "WHEN", "OVERLAP", "STATUS", "NEXT RUN", "LAST FIRED", "SKIPPED", "LAST JOB", "MONITOR", "JOB")
				for _, v := range views {
					sc := v.sc
					status, next := "active", zclock(sc.NextRunAt, v.loc)
					switch {
					case sc.Paused:
						status, next = "paused", "-"
					case sc.NextRunAt.IsZero():
						next = "after job " + fmt.Sprint(sc.LastJobID)
					default:
						next += " (" + relative(sc.NextRunAt) + ")"
					}
					skipped := "-"
					if sc.SkippedTicks > 0 {
						skipped = fmt.Sprintf("%d (last %s)", sc.SkippedTicks, zclock(sc.LastSkipAt, v.loc))
					}
					if n := len(sc.Buffered); n > 0 {
						status += fmt.Sprintf(", %d buffered", n)
					}
					monitor := "-"
					if sc.Monitor != nil {
						monitor = truncate(sc.Monitor.String(), 100)
					}
					t.row(sc.Name, describeSpec(sc), sc.Overlap, status, next, zclock(sc.LastFireAt, v.loc), skipped,
						v.lastJobText(), monitor, sc.Kind+": "+summary(sc.Kind, sc.Args, 40))
				}
				return t.flush()
			})
		},
	}
}

func (a *app) scheduleGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show one schedule whole: rule, policies, monitor, output kept, open incidents",
		Long: `Show the schedule NAME: its rule and zone, job, policies (overlap, catch-up,
jitter), status and times, last job, the timeout of its jobs, its monitor
(what it checks, and the channels it notifies besides those taking every
schedule), the outputs of its runs it keeps (schedule add --keep-succeeded,
--keep-failed, --keep-output-for), and its open incidents (hopper alerts
list --schedule NAME --open).

--json prints the schedule as "schedule list --json" does, with
open_incidents added.

Exit code: 0 if shown; 1 if there is no schedule NAME.`,
		Example: `  hopper schedule get nightly-report
  hopper schedule get --json nightly-report`,
		Args: exactArgs(1, "a schedule NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				sc, err := getSchedule(ctx, s, name)
				if err != nil {
					return err
				}
				v := newScheduleView(sc)
				if err := v.addLastJob(ctx, s); err != nil {
					return err
				}
				if v.incidents, err = s.Incidents(ctx, hopper.IncidentFilter{Schedule: name, Open: true}); err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, v)
				}
				return a.printSchedule(v)
			})
		},
	}
}

// printSchedule prints one schedule for schedule get, a field a line.
func (a *app) printSchedule(v *scheduleView) error {
	sc := v.sc
	var b strings.Builder
	field := func(name, format string, args ...any) {
		fmt.Fprintf(&b, "%-15s %s\n", name+":", fmt.Sprintf(format, args...))
	}
	field("name", "%s", sc.Name)
	field("rule", "%s", describeSpec(sc))
	field("job", "%s: %s", sc.Kind, summary(sc.Kind, sc.Args, 100))
	if sc.Queue != "" {
		field("queue", "%s", sc.Queue)
	}
	policy := sc.Overlap.String() + " on overlap; catch-up " + sc.CatchUp.String()
	if sc.Jitter > 0 {
		policy += fmt.Sprintf("; jitter up to %s (%s)", sc.Jitter, sc.JitterMode)
	}
	field("policies", "%s", policy)
	status := "active, next run " + zclock(sc.NextRunAt, v.loc)
	switch {
	case sc.Paused:
		status = "paused"
	case sc.NextRunAt.IsZero():
		status = fmt.Sprintf("active, next run after job %d", sc.LastJobID)
	}
	if n := len(sc.Buffered); n > 0 {
		status += fmt.Sprintf(", %d buffered", n)
	}
	field("status", "%s", status)
	field("last fired", "%s", zclock(sc.LastFireAt, v.loc))
	field("last job", "%s", v.lastJobText())
	if sc.SkippedTicks > 0 {
		field("skipped", "%d ticks (last %s)", sc.SkippedTicks, zclock(sc.LastSkipAt, v.loc))
	}
	field("timeout", "%s", describeTimeout(sc))
	field("monitor", "%s", sc.Monitor.String())
	kept := sc.OutputRetention.String()
	if sc.OutputRetention == (hopper.OutputRetention{}) {
		kept += " (the defaults)"
	}
	field("output kept", "%s (hopper jobs output ID)", kept)
	if len(v.incidents) == 0 {
		field("open incidents", "none")
	}
	for _, in := range v.incidents {
		field("open incident", "%d %s since %s: %s", in.ID, in.Problem, zclock(in.OpenedAt, v.loc), in.Detail)
	}
	_, err := io.WriteString(a.Out, b.String())
	return err
}

func (a *app) scheduleNextCmd() *cobra.Command {
	var n int
	c := &cobra.Command{
		Use:   "next NAME [-n N]",
		Short: "Print a schedule's next fire times",
		Long: fmt.Sprintf(`Print the next N fire times of the schedule NAME (default 5, at most
%d), one a line, in the schedule's zone (a cron schedule's --tz, else
UTC) with the zone's offset, computed by the scheduler's own rules across
DST changes: a time in a spring-forward gap fires once at the gap's end, a
time repeated by a fall-back once, in its first pass.

An active schedule's times start at its stored next tick (overdue when no
server has fired it). A paused schedule's are the ticks it would fire if
resumed now. A fixed-delay schedule has at most one (each run counts from
the end of the one before), none while its job runs.

--json prints {"schedule", "time_zone", "paused", "next_runs": [times]},
the times in RFC 3339.

Exit code: 0 if printed; 1 if there is no schedule NAME; 2 for an N out of
range.`, hopper.MaxNextRuns),
		Example: `  hopper schedule next nightly-report
  hopper schedule next -n 100 nightly-report`,
		Args: exactArgs(1, "a schedule NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			if n < 1 || n > hopper.MaxNextRuns {
				return usagef("bad -n %d: want 1 to %d fire times", n, hopper.MaxNextRuns)
			}
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				sc, err := getSchedule(ctx, s, name)
				if err != nil {
					return err
				}
				runs, err := sc.NextRuns(time.Now(), n)
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, map[string]any{"schedule": sc.Name, "time_zone": sc.Location().String(),
						"paused": sc.Paused, "next_runs": runs})
				}
				if sc.Paused {
					fmt.Fprintf(a.Err, "schedule %s is paused: the times it would fire at if resumed now\n", name)
				}
				if len(runs) == 0 {
					fmt.Fprintf(a.Err, "schedule %s waits for its job to finish (fixed delay)\n", name)
				}
				for _, t := range runs {
					if _, err := fmt.Fprintf(a.Out, "%s  %s\n", t.Format("Mon 2006-01-02 15:04:05 MST (-07:00)"), relative(t)); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	c.Flags().IntVarP(&n, "n", "n", 5, fmt.Sprintf("how many fire times, 1 to %d", hopper.MaxNextRuns))
	return c
}

func (a *app) scheduleRunCmd() *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "run NAME [--force]",
		Short: "Run a schedule now: enqueue its job as a manual run",
		Long: `Run the schedule NAME now: enqueue the job its ticks enqueue, with all its
options, marked manual ("manual": true on the job; hopper jobs get shows
"manual run of NAME"). It prints the job's ID (the job with --json); the job
exists at once, and a running "hopper serve" picks it up. A paused schedule
runs too; its next tick does not move.

With --overlap skip (the default), a schedule whose previous job (a tick's or
a manual run's) is waiting for a worker or running is not run: give --force
to run it anyway. With buffer-one or buffer-all, the run waits for the
previous job instead (it prints "buffered"), unless the buffer is full;
--force runs it at once. With cancel or terminate, the previous job is
cancelled or killed.

Exit code: 0 if the job was enqueued or buffered; 1 if there is no schedule
NAME or its previous job has not finished.`,
		Example: `  hopper schedule run nightly-report
  hopper schedule run --force nightly-report`,
		Args: exactArgs(1, "a schedule NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				j, err := s.RunSchedule(ctx, name, hopper.RunScheduleOptions{Force: force})
				if errors.Is(err, hopper.ErrNotFound) {
					return fmt.Errorf("schedule %q not found%s", name, scheduleNames(ctx, s))
				}
				var busy *hopper.ScheduleBusyError
				if errors.As(err, &busy) && busy.Buffered {
					_, err = fmt.Fprintf(a.Out, "buffered: schedule %q runs when its previous job %d finishes (overlap %s; --force runs it now)\n", name, busy.Job, busy.Overlap)
					return err
				}
				if errors.As(err, &busy) {
					return fmt.Errorf("schedule %q not run: its previous job %d is %s and its overlap policy is %s (--force runs it anyway)", name, busy.Job, busy.State, busy.Overlap)
				}
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, j)
				}
				_, err = fmt.Fprintln(a.Out, j.ID)
				return err
			})
		},
	}
	c.Flags().BoolVar(&force, "force", false, "run even if the overlap policy would refuse (the previous job has not finished)")
	return c
}

func (a *app) scheduleBackfillCmd() *cobra.Command {
	var b wire.Backfill
	c := &cobra.Command{
		Use:   "backfill NAME --from TIME --to TIME",
		Short: "Enqueue the jobs of a schedule's past ticks in a range, each once",
		Long: `Backfill the schedule NAME: enqueue the job of each of its ticks from --from
to --to (both included, RFC 3339; --to not in the future), keyed by
(schedule, tick) as the scheduler's jobs are: a tick whose job exists (it
fired at its time, or an earlier backfill made it) is not enqueued again,
so repeating a backfill creates nothing twice. A paused schedule is
backfilled too; its next tick does not move.

The ticks go through the schedule's overlap policy in order: allow fires
each; skip fires one and skips the rest while it waits; buffer-all keeps
the rest waiting and runs them one at a time (buffer-one keeps one);
cancel and terminate leave the last. At most the schedule's catch-up cap
(--catch-up-max, default 100) of the latest ticks run; the older are
counted as over the cap.

It prints what it did (the result as JSON with --json). Exit code: 0 if
the range was backfilled; 1 if there is no schedule NAME; 2 for a bad range.`,
		Example: `  hopper schedule backfill nightly-report --from 2030-01-01T00:00:00Z --to 2030-01-07T23:59:59Z`,
		Args:    exactArgs(1, "a schedule NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			from, to, err := b.Range()
			if err != nil {
				return flagError(cmd.Flags(), err)
			}
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				res, err := s.BackfillSchedule(ctx, name, from, to)
				if errors.Is(err, hopper.ErrNotFound) {
					return fmt.Errorf("schedule %q not found%s", name, scheduleNames(ctx, s))
				}
				var fe *hopper.FieldError
				if errors.As(err, &fe) {
					return flagError(cmd.Flags(), err)
				}
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, res)
				}
				_, err = fmt.Fprintf(a.Out, "schedule %s backfilled: %d ticks, %d fired, %d existed, %d skipped, %d buffered, %d over the cap\n",
					name, res.Ticks, len(res.Fired), res.Existed, res.Skipped, res.Buffered, res.OverCap)
				return err
			})
		},
	}
	c.Flags().StringVar(&b.From, "from", "", "the first tick time to backfill, RFC 3339 (e.g. 2030-01-02T15:04:05Z)")
	c.Flags().StringVar(&b.To, "to", "", "the last tick time to backfill, RFC 3339, not in the future")
	return c
}

// scheduleSetCmd is pause, resume or rm.
func (a *app) scheduleSetCmd(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long: short + `.

` + map[string]string{
			"pause":  "Exit code: 0 if the schedule is paused (or already was); 1 if there is\nno schedule NAME.",
			"resume": "Exit code: 0 if the schedule is active (or already was); 1 if there is\nno schedule NAME.",
			"rm":     "Exit code: 0 if the schedule is removed; 1 if there is no schedule NAME.",
		}[verb],
		Args: exactArgs(1, "a schedule NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				done := map[string]string{"pause": "paused", "resume": "resumed", "rm": "removed"}[verb]
				changed := true
				var err error
				switch verb {
				case "pause", "resume":
					var sc *hopper.Schedule
					if sc, err = s.GetSchedule(ctx, name); err != nil {
						break
					}
					switch {
					case verb == "pause" && sc.Paused:
						changed = false
					case verb == "resume" && !sc.Paused:
						changed, done = false, "active"
					case verb == "pause":
						err = s.PauseSchedule(ctx, name)
					default:
						err = s.ResumeSchedule(ctx, name)
					}
				default:
					err = s.RemoveSchedule(ctx, name)
				}
				if errors.Is(err, hopper.ErrNotFound) {
					return fmt.Errorf("schedule %q not found%s", name, scheduleNames(ctx, s))
				}
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, map[string]any{"schedule": name, "status": done, "changed": changed})
				}
				if !changed {
					done = "already " + done
				}
				fmt.Fprintf(a.Out, "schedule %s %s\n", name, done)
				return nil
			})
		},
	}
}

// scheduleNames lists the existing schedules for a not-found message.
// getSchedule returns the schedule name, or an error naming the
// schedules there are when it does not exist.
func getSchedule(ctx context.Context, s *session, name string) (*hopper.Schedule, error) {
	sc, err := s.GetSchedule(ctx, name)
	if errors.Is(err, hopper.ErrNotFound) {
		return nil, fmt.Errorf("schedule %q not found%s", name, scheduleNames(ctx, s))
	}
	return sc, err
}

func scheduleNames(ctx context.Context, s *session) string {
	scheds, err := s.Schedules(ctx)
	if err != nil || len(scheds) == 0 {
		return " (there are no schedules)"
	}
	var names []string
	for _, sc := range scheds {
		names = append(names, sc.Name)
	}
	slices.Sort(names)
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return " (schedules: " + strings.Join(names, ", ") + ")"
}
