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
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) scheduleCmd() *cobra.Command {
	c := group("schedule", "Recurring schedules: add, list, pause, resume, rm",
		a.scheduleAddCmd(), a.scheduleListCmd(),
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
	cron, tz, overlap string
	every             time.Duration
	fixedDelay        bool
	replace           bool
	job               jobFlags
}

func (f *scheduleFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.cron, "cron", "", `cron expression: 5 fields (minute first), 6 with seconds first, or @hourly, @daily, @weekly, @monthly, @yearly`)
	fs.StringVar(&f.tz, "tz", "", "IANA time zone the cron expression is read in (default UTC), e.g. Europe/Paris")
	fs.DurationVar(&f.every, "every", 0, "fire at this fixed rate instead of --cron, e.g. 5m (at least 1s)")
	fs.BoolVar(&f.fixedDelay, "fixed-delay", false, "with --every: count the interval from the end of the previous run")
	fs.StringVar(&f.overlap, "overlap", "skip", "when a tick comes while the previous run is unfinished: skip the tick, or allow it")
	fs.BoolVar(&f.replace, "replace", false, "replace a schedule of the same name instead of failing")
	f.job.register(fs, true)
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
			return a.scheduleAdd(cmd.Context(), name, kind, jobArgs, &f)
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

func (a *app) scheduleAdd(ctx context.Context, name, kind string, jobArgs any, f *scheduleFlags) error {
	o := hopper.ScheduleOptions{
		Cron: f.cron, TimeZone: f.tz, Every: f.every, FixedDelay: f.fixedDelay, Replace: f.replace,
		Kind: kind, Args: jobArgs, Queue: f.job.queue, Priority: f.job.priority,
		MaxAttempts: f.job.maxAttempts, Timeout: f.job.timeout,
	}
	switch {
	case f.cron == "" && f.every == 0:
		return usagef("give --cron EXPR or --every D")
	case f.cron != "" && f.every != 0:
		return usagef("give --cron or --every, not both")
	case f.tz != "" && f.cron == "":
		return usagef("--tz applies to --cron only")
	case f.fixedDelay && f.every == 0:
		return usagef("--fixed-delay applies to --every only")
	}
	switch f.overlap {
	case "skip":
		o.Overlap = hopper.OverlapSkip
	case "allow":
		o.Overlap = hopper.OverlapAllow
	default:
		return usagef("bad --overlap %q: want skip or allow", f.overlap)
	}
	if f.job.maxAttempts < 0 || f.job.timeout < 0 {
		return usagef("--max-attempts and --timeout must not be negative")
	}
	var err error
	if o.Retry, err = f.job.retry(); err != nil {
		return err
	}
	return a.withSession(ctx, openOpts{create: true}, func(s *session) error {
		sc, err := s.AddSchedule(ctx, name, o)
		switch {
		case errors.Is(err, hopper.ErrDuplicate):
			return fmt.Errorf("schedule %q already exists (use --replace to replace it)", name)
		case err != nil:
			return enqueueError(err)
		}
		if a.json {
			return printJSON(a.Out, sc)
		}
		verb := "added"
		if f.replace {
			verb = "saved"
		}
		fmt.Fprintf(a.Out, "schedule %s %s: %s; next run %s\n", name, verb, describeSpec(sc), fullTime(sc.NextRunAt))
		return nil
	})
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
		Short: "List the schedules with their next fire times",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				scheds, err := s.Schedules(ctx)
				if err != nil {
					return err
				}
				if a.json {
					if scheds == nil {
						scheds = []*hopper.Schedule{}
					}
					return printJSON(a.Out, scheds)
				}
				if len(scheds) == 0 {
					fmt.Fprintln(a.Err, "no schedules")
					return nil
				}
				t := newTable(a.Out, "NAME", "WHEN", "STATUS", "NEXT RUN", "LAST FIRED", "LAST JOB", "JOB")
				for _, sc := range scheds {
					status, next := "active", clock(sc.NextRunAt)
					switch {
					case sc.Paused:
						status, next = "paused", "-"
					case sc.NextRunAt.IsZero():
						next = "after job " + fmt.Sprint(sc.LastJobID)
					default:
						next += " (" + relative(sc.NextRunAt) + ")"
					}
					last := "-"
					if sc.LastJobID != 0 {
						last = fmt.Sprint(sc.LastJobID)
					}
					t.row(sc.Name, describeSpec(sc), status, next, clock(sc.LastFireAt), last, sc.Kind+": "+summary(sc.Kind, sc.Args, 40))
				}
				return t.flush()
			})
		},
	}
}

// scheduleSetCmd is pause, resume or rm.
func (a *app) scheduleSetCmd(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  exactArgs(1, "a schedule NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				var err error
				switch verb {
				case "pause":
					err = s.PauseSchedule(ctx, name)
				case "resume":
					err = s.ResumeSchedule(ctx, name)
				default:
					err = s.RemoveSchedule(ctx, name)
				}
				if errors.Is(err, hopper.ErrNotFound) {
					names := scheduleNames(ctx, s)
					return fmt.Errorf("schedule %q not found%s", name, names)
				}
				if err != nil {
					return err
				}
				done := map[string]string{"pause": "paused", "resume": "resumed", "rm": "removed"}[verb]
				if a.json {
					return printJSON(a.Out, map[string]string{"schedule": name, "status": done})
				}
				fmt.Fprintf(a.Out, "schedule %s %s\n", name, done)
				return nil
			})
		},
	}
}

// scheduleNames lists the existing schedules for a not-found message.
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
