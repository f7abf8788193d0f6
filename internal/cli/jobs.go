package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/statsview"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/job"
	"github.com/spf13/cobra"
)

func (a *app) jobsCmd() *cobra.Command {
	return group("jobs", "List, inspect, cancel and reschedule jobs",
		a.jobsListCmd(), a.jobsCountCmd(), a.jobsGetCmd(), a.jobsOutputCmd(), a.jobsCancelCmd(), a.jobsRescheduleCmd())
}

func (a *app) jobsCountCmd() *cobra.Command {
	var states, queue, kind, tag string
	c := &cobra.Command{
		Use:   "count [--state S[,S...]] [--queue Q] [--kind K] [--tag T]",
		Short: "Count jobs by state, queue, kind and tag",
		Long: `Count the jobs matching every filter given (all jobs if none).
--state takes the same names and groups as jobs list.`,
		Example: `  hopper jobs count --state waiting
  hopper jobs count --kind http --state dead --json
  hopper jobs count --tag billing --state dead`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseStates(states)
			if err != nil {
				return err
			}
			if err := checkTagFlag(tag); err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				n, err := s.Count(ctx, hopper.ListOptions{States: st, Queue: queue, Kind: kind, Tag: tag})
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, map[string]int{"count": n})
				}
				fmt.Fprintln(a.Out, n)
				return nil
			})
		},
	}
	c.Flags().StringVar(&states, "state", "", "only jobs in these states (comma-separated)")
	c.Flags().StringVar(&queue, "queue", "", "only jobs of this queue")
	c.Flags().StringVar(&kind, "kind", "", "only jobs of this kind")
	c.Flags().StringVar(&tag, "tag", "", "only jobs carrying this tag")
	return c
}

func (a *app) jobsListCmd() *cobra.Command {
	var (
		states, queue, kind string
		tag                 string
		limit               int
		after               int64
		desc                bool
	)
	c := &cobra.Command{
		Use:   "list [--state S[,S...]] [--queue Q] [--kind K] [--tag T] [--limit N] [--desc] [--after ID]",
		Short: "List jobs, oldest first",
		Long: `List jobs, oldest first (newest first with --desc), at most --limit.
--state takes one or more of scheduled, available, running, retrying,
completed, cancelled, dead, and the groups waiting (scheduled, available,
retrying) and finished (completed, cancelled, dead).

When more jobs match than --limit shows, a note on stderr says so and gives
the --after ID of the next page.`,
		Example: `  hopper jobs list
  hopper jobs list --state waiting --queue emails
  hopper jobs list --tag billing --desc
  hopper jobs list --state dead,cancelled --desc --limit 20 --json
  hopper jobs list --limit 100 --after 4711   # the next page`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseStates(states)
			if err != nil {
				return err
			}
			if limit < 1 {
				return usagef("bad --limit %d: must be at least 1", limit)
			}
			if after < 0 {
				return usagef("bad --after %d: must be a job ID (positive)", after)
			}
			if err := checkTagFlag(tag); err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				jobs, more, err := listPage(ctx, s, hopper.ListOptions{States: st, Queue: queue, Kind: kind, Tag: tag, AfterID: hopper.ID(after), Desc: desc}, limit)
				if err != nil {
					return err
				}
				a.moreNote(jobs, more)
				if done, err := a.printJobsOr(jobs, "no jobs"); done {
					return err
				}
				t := newTable(a.Out, "ID", "STATE", "KIND", "QUEUE", "PRI", "ATTEMPT", "WHEN", "JOB")
				for _, j := range jobs {
					t.row(j.ID, j.State, j.Kind, j.Queue, j.Priority, fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts), when(j), summary(j.Kind, j.Args, 60))
				}
				return t.flush()
			})
		},
	}
	c.Flags().StringVar(&states, "state", "", "only jobs in these states (comma-separated)")
	c.Flags().StringVar(&queue, "queue", "", "only jobs of this queue")
	c.Flags().StringVar(&kind, "kind", "", "only jobs of this kind")
	c.Flags().StringVar(&tag, "tag", "", "only jobs carrying this tag")
	c.Flags().IntVar(&limit, "limit", 100, "at most this many jobs")
	c.Flags().Int64Var(&after, "after", 0, "only jobs after this ID (before it with --desc), for paging")
	c.Flags().BoolVar(&desc, "desc", false, "newest first")
	return c
}

// readPage is how many jobs the CLI asks a List call for when it pages
// through more: well under hopper.MaxListLimit, so that one call's jobs
// (their args and results) stay small in memory.
const readPage = 1000

// listPage lists up to limit jobs, paging through the store, and reports
// whether more match.
func listPage(ctx context.Context, s *session, o hopper.ListOptions, limit int) ([]*hopper.Job, bool, error) {
	var out []*hopper.Job
	want := limit + 1 // one more tells whether there is a next page
	for len(out) < want {
		o.Limit = min(want-len(out), readPage)
		page, err := s.List(ctx, o)
		if err != nil {
			return nil, false, err
		}
		out = append(out, page...)
		if len(page) < o.Limit {
			break
		}
		o.AfterID = page[len(page)-1].ID
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// moreNote says on stderr that more jobs match than were listed, and how
// to see the next page.
func (a *app) moreNote(jobs []*hopper.Job, more bool) {
	if more && len(jobs) > 0 {
		fmt.Fprintf(a.Err, "hopper: %d jobs listed and more match; for the next page add --after %d (or raise --limit)\n",
			len(jobs), jobs[len(jobs)-1].ID)
	}
}

func (a *app) jobsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a job: all its fields, attempt history with output, result and last error",
		Long: `Show a job: all its fields, its args, the history of its attempts (for exec
jobs with the exit code and the last lines of stdout and stderr of each),
its result and its last error, then the output each attempt kept (the
sizes of its stdout, stderr and log, and the last lines of the latest log;
hopper jobs output prints them in full). A waiting job that a pause, a
limit or a throttle holds back says so ("held: key tenant=42 at its limit
of 2"; wait_reason in --json). --json prints the job with everything,
including each attempt's full result.`,
		Example: "  hopper jobs get 42\n  hopper jobs get 42 --json | jq .result",
		Args:    exactArgs(1, "a job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				j, err := getJob(ctx, s, id)
				if err != nil {
					return err
				}
				why, err := s.WaitReason(ctx, j)
				if err != nil {
					return err
				}
				if a.json {
					b, err := statsview.Job(j, why)
					if err != nil {
						return err
					}
					return printJSON(a.Out, json.RawMessage(b))
				}
				if err := printJob(a.Out, j, why); err != nil {
					return err
				}
				outs, err := s.Outputs(ctx, id)
				if err != nil {
					return err
				}
				return printOutputs(a.Out, id, outs)
			})
		},
	}
}

// getJob gets a job with a clear not-found error.
func getJob(ctx context.Context, s *session, id hopper.ID) (*hopper.Job, error) {
	j, err := s.Get(ctx, id)
	if errors.Is(err, hopper.ErrNotFound) {
		return nil, fmt.Errorf("job %d not found", id)
	}
	return j, err
}

func (a *app) jobsCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID...",
		Short: "Cancel jobs",
		Long: `Cancel jobs. A waiting job is cancelled at once. A running job is asked to
stop: its server cancels it at its next lease renewal (within a third of
its --lease, 10s by default), killing an exec job's processes; if it then
fails it ends cancelled, if it completes anyway it ends completed. A job
already cancelled is reported as such.

Exit code: 0 if every job is cancelled or its cancellation requested
(including jobs already cancelled); 1 if a job was not found or has
already completed or died (it cannot be cancelled); every job given is
acted on and reported either way.`,
		Example: "  hopper jobs cancel 42\n  hopper jobs cancel 42 43 44 --json",
		Args:    minArgs(1, "one or more job IDs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				var rs []target
				for _, id := range ids {
					rs = append(rs, cancelJob(ctx, s, id))
				}
				return a.report(rs, "jobs not cancelled")
			})
		},
	}
}

// cancelJob cancels one job and says how that went.
func cancelJob(ctx context.Context, s *session, id hopper.ID) target {
	before, err := s.Get(ctx, id)
	if err != nil {
		return failed(id, err)
	}
	if before.State == hopper.StateCancelled {
		return target{ID: id, OK: true, State: before.State.String(), Result: "already cancelled"}
	}
	ok, err := s.Cancel(ctx, id)
	if err != nil {
		return failed(id, err)
	}
	j, err := s.Get(ctx, id)
	if err != nil {
		return failed(id, err)
	}
	t := target{ID: id, State: j.State.String()}
	switch {
	case ok && j.State == hopper.StateRunning:
		t.OK, t.Result = true, "running: cancellation requested; its server stops it at its next lease renewal"
	case ok || j.State == hopper.StateCancelled:
		t.OK, t.Result = true, "cancelled"
	default:
		t.Error = fmt.Sprintf("not cancelled: it already %s", finishedVerb(j.State))
	}
	return t
}

// finishedVerb says how a job finished: "completed", "died".
func finishedVerb(s hopper.State) string {
	if s == hopper.StateDead {
		return "died (it is in the dead-letter queue)"
	}
	return s.String()
}

func (a *app) jobsRescheduleCmd() *cobra.Command {
	var (
		at       string
		delay    time.Duration
		priority int
	)
	c := &cobra.Command{
		Use:   "reschedule ID [--at TIME | --delay D] [--priority N]",
		Short: "Move a waiting job to another time and/or priority",
		Long: `Move a waiting job (scheduled, available or retrying) to another run time
and/or priority. A job that is running or finished cannot be moved: the
command fails (exit 1) and says so.`,
		Example: `  hopper jobs reschedule 42 --delay 1h
  hopper jobs reschedule 42 --at 2030-01-02T15:04:05Z --priority -5
  hopper jobs reschedule 42 --delay 0 --priority -10   # run now, first`,
		Args: exactArgs(1, "a job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			var d wire.Reschedule
			fs := cmd.Flags()
			if fs.Changed("at") {
				d.RunAt = &at
			}
			if fs.Changed("delay") {
				d.Delay = (*wire.Duration)(&delay)
			}
			if fs.Changed("priority") {
				d.Priority = &priority
			}
			if d.RunAt == nil && d.Delay == nil && d.Priority == nil {
				return usagef("give --at, --delay or --priority")
			}
			runAt, pri, err := d.Args(time.Now())
			if err != nil {
				return flagError(fs, err)
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				if _, err := getJob(ctx, s, id); err != nil {
					return err
				}
				j, err := s.Reschedule(ctx, id, runAt, pri)
				if errors.Is(err, hopper.ErrNotWaiting) {
					state := "no longer waiting"
					if cur, _ := s.Get(ctx, id); cur != nil {
						state = cur.State.String()
					}
					return fmt.Errorf("job %d cannot be rescheduled: it is %s (only waiting jobs can)", id, state)
				}
				if err != nil {
					return enqueueError(err)
				}
				if a.json {
					return printJSON(a.Out, j)
				}
				fmt.Fprintf(a.Out, "job %d rescheduled: runs at %s, priority %d\n", id, fullTime(j.RunAt), j.Priority)
				return nil
			})
		},
	}
	c.Flags().StringVar(&at, "at", "", "new run time, RFC 3339")
	c.Flags().DurationVar(&delay, "delay", 0, "new run time, this long from now (0: now)")
	c.Flags().IntVar(&priority, "priority", 0, fmt.Sprintf("new priority (lower runs first), from %d to %d", hopper.MinPriority, hopper.MaxPriority))
	return c
}

// checkTagFlag returns a usage error unless tag is empty or a tag.
func checkTagFlag(tag string) error {
	if tag == "" {
		return nil
	}
	var fe *hopper.FieldError
	if err := job.CheckTag("tag", tag); errors.As(err, &fe) {
		return usagef("bad --tag %q: %s", tag, fe.Reason)
	}
	return nil
}
