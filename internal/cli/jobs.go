package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper"
	"github.com/spf13/cobra"
)

func (a *app) jobsCmd() *cobra.Command {
	return group("jobs", "List, inspect, cancel and reschedule jobs",
		a.jobsListCmd(), a.jobsCountCmd(), a.jobsGetCmd(), a.jobsCancelCmd(), a.jobsRescheduleCmd())
}

func (a *app) jobsCountCmd() *cobra.Command {
	var states, queue, kind string
	c := &cobra.Command{
		Use:   "count [--state S[,S...]] [--queue Q] [--kind K]",
		Short: "Count jobs by state, queue and kind",
		Long: `Count the jobs matching every filter given (all jobs if none).
--state takes the same names and groups as jobs list.`,
		Example: `  hopper jobs count --state waiting
  hopper jobs count --kind http --state dead --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseStates(states)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				n, err := s.Count(ctx, hopper.ListOptions{States: st, Queue: queue, Kind: kind})
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
	return c
}

func (a *app) jobsListCmd() *cobra.Command {
	var (
		states, queue, kind string
		limit               int
		after               int64
		desc                bool
	)
	c := &cobra.Command{
		Use:   "list [--state S[,S...]] [--queue Q] [--kind K] [--limit N]",
		Short: "List jobs, oldest first",
		Long: `List jobs, oldest first (newest first with --desc), at most --limit.
--state takes one or more of scheduled, available, running, retrying,
completed, cancelled, dead, and the groups waiting (scheduled, available,
retrying) and finished (completed, cancelled, dead).`,
		Example: `  hopper jobs list
  hopper jobs list --state waiting --queue emails
  hopper jobs list --state dead,cancelled --desc --limit 20 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := parseStates(states)
			if err != nil {
				return err
			}
			if limit < 1 {
				return usagef("bad --limit %d: must be at least 1", limit)
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				jobs, err := listAll(ctx, s, hopper.ListOptions{States: st, Queue: queue, Kind: kind, AfterID: hopper.ID(after), Desc: desc}, limit)
				if err != nil {
					return err
				}
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
	c.Flags().IntVar(&limit, "limit", 100, "at most this many jobs")
	c.Flags().Int64Var(&after, "after", 0, "only jobs after this ID (before it with --desc), for paging")
	c.Flags().BoolVar(&desc, "desc", false, "newest first")
	return c
}

// listAll lists up to limit jobs, paging through the store.
func listAll(ctx context.Context, s *session, o hopper.ListOptions, limit int) ([]*hopper.Job, error) {
	var out []*hopper.Job
	for len(out) < limit {
		o.Limit = min(limit-len(out), 1000)
		page, err := s.List(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < o.Limit {
			break
		}
		o.AfterID = page[len(page)-1].ID
	}
	return out, nil
}

func (a *app) jobsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get ID",
		Short:   "Show a job: all its fields, attempt history, result and last error",
		Example: "  hopper jobs get 42\n  hopper jobs get 42 --json | jq .result",
		Args:    exactArgs(1, "a job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				j, err := getJob(ctx, s, id)
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, j)
				}
				return printJob(a.Out, j)
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
		Use:   "cancel ID",
		Short: "Cancel a job",
		Long: `Cancel a job. A waiting job is cancelled at once. A running job is asked to
stop: its server cancels it at its next lease renewal (within 10s), killing
an exec job's processes; if it then fails it ends cancelled, if it completes
anyway it ends completed. A finished job cannot be cancelled; that is said,
and the exit code is still 0.`,
		Args: exactArgs(1, "a job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				if _, err := getJob(ctx, s, id); err != nil {
					return err
				}
				ok, err := s.Cancel(ctx, id)
				if err != nil {
					return err
				}
				j, err := getJob(ctx, s, id)
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, map[string]any{"id": id, "cancelled": ok, "state": j.State, "cancel_requested": j.CancelRequested})
				}
				switch {
				case ok && j.State == hopper.StateRunning:
					fmt.Fprintf(a.Out, "job %d is running: cancellation requested; its server stops it shortly\n", id)
				case ok:
					fmt.Fprintf(a.Out, "job %d cancelled\n", id)
				default:
					fmt.Fprintf(a.Out, "job %d not cancelled: it is already %s\n", id, j.State)
				}
				return nil
			})
		},
	}
}

func (a *app) jobsRescheduleCmd() *cobra.Command {
	var (
		at       string
		delay    time.Duration
		priority int
	)
	c := &cobra.Command{
		Use:   "reschedule ID (--at TIME | --delay D) [--priority N]",
		Short: "Move a waiting job to another time and/or priority",
		Example: `  hopper jobs reschedule 42 --delay 1h
  hopper jobs reschedule 42 --at 2030-01-02T15:04:05Z --priority -5
  hopper jobs reschedule 42 --delay 0 --priority -10   # run now, first`,
		Args: exactArgs(1, "a job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			var runAt time.Time
			var pri *int
			atSet, delaySet := cmd.Flags().Changed("at"), cmd.Flags().Changed("delay")
			switch {
			case atSet && delaySet:
				return usagef("give --at or --delay, not both")
			case atSet:
				if runAt, err = parseAt("--at", at); err != nil {
					return err
				}
			case delaySet:
				if delay < 0 {
					return usagef("bad --delay %s: must not be negative", delay)
				}
				runAt = time.Now().Add(delay)
			}
			if cmd.Flags().Changed("priority") {
				pri = &priority
			}
			if runAt.IsZero() && pri == nil {
				return usagef("give --at, --delay or --priority")
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				if _, err := getJob(ctx, s, id); err != nil {
					return err
				}
				j, err := s.Reschedule(ctx, id, runAt, pri)
				if errors.Is(err, hopper.ErrNotWaiting) {
					cur, _ := s.Get(ctx, id)
					state := "no longer waiting"
					if cur != nil {
						state = "already " + cur.State.String()
					}
					return fmt.Errorf("job %d cannot be rescheduled: it is %s", id, state)
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
	c.Flags().IntVar(&priority, "priority", 0, "new priority (lower runs first)")
	return c
}
