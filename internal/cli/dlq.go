package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperq/hopper"
	"github.com/spf13/cobra"
)

func (a *app) dlqCmd() *cobra.Command {
	c := group("dlq", "The dead-letter queue: jobs that failed for good",
		a.dlqListCmd(), a.dlqRetryCmd(), a.dlqPurgeCmd())
	c.Long = `The dead-letter queue holds the jobs that failed for good: they ran out of
attempts, failed permanently, or their worker died under them too many times.
They stay there, with their attempt history, until retried or purged (or
after 7 days).`
	return c
}

func (a *app) dlqListCmd() *cobra.Command {
	var limit int
	var after int64
	c := &cobra.Command{
		Use:   "list [--limit N]",
		Short: "List dead jobs, oldest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("bad --limit %d: must be at least 1", limit)
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				jobs, err := listAll(ctx, s, hopper.ListOptions{States: []hopper.State{hopper.StateDead}, AfterID: hopper.ID(after)}, limit)
				if err != nil {
					return err
				}
				if done, err := a.printJobsOr(jobs, "the dead-letter queue is empty"); done {
					return err
				}
				t := newTable(a.Out, "ID", "KIND", "QUEUE", "ATTEMPTS", "DIED", "JOB", "LAST ERROR")
				for _, j := range jobs {
					t.row(j.ID, j.Kind, j.Queue, fmt.Sprintf("%d/%d", j.Attempt, j.MaxAttempts), clock(j.FinishedAt),
						summary(j.Kind, j.Args, 40), orDash(truncate(j.LastError, 60)))
				}
				return t.flush()
			})
		},
	}
	c.Flags().IntVar(&limit, "limit", 100, "at most this many jobs")
	c.Flags().Int64Var(&after, "after", 0, "only jobs after this ID, for paging")
	return c
}

func (a *app) dlqRetryCmd() *cobra.Command {
	var all bool
	c := &cobra.Command{
		Use:   "retry (ID... | --all)",
		Short: "Move dead jobs back to waiting, with their attempts reset",
		Long: `Move dead jobs back to waiting with their attempt count reset, so that they
run again (their history is kept). A dead job whose unique key is now held
by another waiting or running job stays dead.`,
		Example: "  hopper dlq retry 17 18\n  hopper dlq retry --all",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usagef("give job IDs or --all")
			}
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				n, err := s.RetryDead(ctx, ids...)
				if err != nil {
					return err
				}
				var notes []string
				for _, id := range ids {
					if note := stillDead(ctx, s, id); note != "" {
						notes = append(notes, note)
					}
				}
				if a.json {
					if notes == nil {
						notes = []string{}
					}
					return printJSON(a.Out, map[string]any{"retried": n, "not_retried": notes})
				}
				fmt.Fprintf(a.Out, "%d %s back to waiting\n", n, plural(n, "job", "jobs"))
				for _, note := range notes {
					fmt.Fprintln(a.Err, "hopper: "+note)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&all, "all", false, "retry every dead job")
	return c
}

// stillDead explains why job id was not retried, or returns "".
func stillDead(ctx context.Context, s *session, id hopper.ID) string {
	j, err := s.Get(ctx, id)
	switch {
	case err != nil:
		return fmt.Sprintf("job %d not found", id)
	case j.State == hopper.StateDead:
		return fmt.Sprintf("job %d stays dead: its unique key %q is held by another job", id, j.UniqueKey)
	case j.State.Waiting() || j.State == hopper.StateRunning:
		return ""
	default:
		return fmt.Sprintf("job %d is not dead: it is %s", id, j.State)
	}
}

func (a *app) dlqPurgeCmd() *cobra.Command {
	var olderThan time.Duration
	c := &cobra.Command{
		Use:   "purge [--older-than D] [ID...]",
		Short: "Delete dead jobs for good",
		Long: `Delete dead jobs for good: the given IDs, or else every dead job that died
more than --older-than ago, or else (no IDs, no --older-than) every dead job.`,
		Example: "  hopper dlq purge 17\n  hopper dlq purge --older-than 72h\n  hopper dlq purge",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			if olderThan < 0 {
				return usagef("bad --older-than %s: must not be negative", olderThan)
			}
			if len(ids) > 0 && olderThan > 0 {
				return usagef("give IDs or --older-than, not both")
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{}, func(s *session) error {
				n, err := s.PurgeDead(ctx, olderThan, ids...)
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, map[string]int{"purged": n})
				}
				fmt.Fprintf(a.Out, "%d dead %s purged\n", n, plural(n, "job", "jobs"))
				if len(ids) > n {
					fmt.Fprintf(a.Err, "hopper: %d of the given jobs were not dead or not found\n", len(ids)-n)
				}
				return nil
			})
		},
	}
	c.Flags().DurationVar(&olderThan, "older-than", 0, "only jobs that died more than this long ago, e.g. 72h")
	return c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
