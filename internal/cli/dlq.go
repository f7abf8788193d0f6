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
		Use:   "list [--limit N] [--after ID]",
		Short: "List dead jobs, oldest first",
		Long: `List the dead jobs, oldest first, with their last error. When more are dead
than --limit shows, a note on stderr gives the --after ID of the next page.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usagef("bad --limit %d: must be at least 1", limit)
			}
			if after < 0 {
				return usagef("bad --after %d: must be a job ID (positive)", after)
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				jobs, more, err := listPage(ctx, s, hopper.ListOptions{States: []hopper.State{hopper.StateDead}, AfterID: hopper.ID(after)}, limit)
				if err != nil {
					return err
				}
				a.moreNote(jobs, more)
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
run again (their history is kept): the jobs given, or every dead job with
--all. Giving neither is a usage error: no IDs never means "all".

A dead job whose unique key is now held by another waiting or running job
stays dead. Exit code: 0 if every job went back to waiting; 1 if a job was
not found, is not dead, or stayed dead (each is reported).`,
		Example: "  hopper dlq retry 17 18\n  hopper dlq retry --all",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return usagef("give job IDs or --all (exactly one): dlq retry ID... | dlq retry --all")
			}
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				if all {
					return a.retryAllDead(ctx, s)
				}
				var ts []target
				for _, id := range ids {
					ts = append(ts, retryDead(ctx, s, id))
				}
				return a.report(ts, "jobs not retried")
			})
		},
	}
	c.Flags().BoolVar(&all, "all", false, "retry every dead job")
	return c
}

// retryDead retries one dead job and says how that went.
func retryDead(ctx context.Context, s *session, id hopper.ID) target {
	j, err := s.Get(ctx, id)
	if err != nil {
		return failed(id, err)
	}
	if j.State != hopper.StateDead {
		return target{ID: id, State: j.State.String(), Error: fmt.Sprintf("is not dead: it is %s", j.State)}
	}
	n, err := s.RetryDead(ctx, id)
	if err != nil {
		return failed(id, err)
	}
	if j, err = s.Get(ctx, id); err != nil {
		return failed(id, err)
	}
	switch {
	case n == 1:
		return target{ID: id, OK: true, State: j.State.String(), Result: "back to waiting (" + j.State.String() + ")"}
	case j.State == hopper.StateDead:
		return target{ID: id, State: j.State.String(), Error: stillDead(j)}
	default:
		return target{ID: id, State: j.State.String(), Error: fmt.Sprintf("is not dead: it is %s", j.State)}
	}
}

func stillDead(j *hopper.Job) string {
	return fmt.Sprintf("stays dead: its unique key %q is held by another waiting or running job", j.UniqueKey)
}

// retryAllDead retries every dead job, and reports those that stayed dead
// (their unique key is held) as failures.
func (a *app) retryAllDead(ctx context.Context, s *session) error {
	start := time.Now()
	n, err := s.RetryAllDead(ctx)
	if err != nil {
		return err
	}
	var stayed []target
	for after := hopper.ID(0); ; {
		page, err := s.List(ctx, hopper.ListOptions{States: []hopper.State{hopper.StateDead}, AfterID: after, Limit: readPage})
		if err != nil {
			return err
		}
		for _, j := range page {
			if j.FinishedAt.Before(start) { // not one that died since
				stayed = append(stayed, target{ID: j.ID, State: j.State.String(), Error: stillDead(j)})
			}
		}
		if len(page) < readPage {
			break
		}
		after = page[len(page)-1].ID
	}
	return a.reportAs(targets{Done: n, Jobs: stayed}, "dead jobs stayed dead", func() {
		fmt.Fprintf(a.Out, "%d %s back to waiting\n", n, plural(n, "job", "jobs"))
	})
}

func (a *app) dlqPurgeCmd() *cobra.Command {
	var (
		olderThan time.Duration
		all       bool
	)
	c := &cobra.Command{
		Use:   "purge (ID... | --older-than D | --all)",
		Short: "Delete dead jobs for good",
		Long: `Delete dead jobs for good: the jobs given, or every job dead for more than
--older-than, or every dead job with --all. Give exactly one of them: no
IDs never means "all".

Exit code: 0 if every job given was dead and is deleted (--older-than and
--all succeed even when there is nothing to delete); 1 if a job given was
not found or is not dead (each is reported; the others are deleted).`,
		Example: "  hopper dlq purge 17 18\n  hopper dlq purge --older-than 72h\n  hopper dlq purge --all",
		Args:    cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(args)
			if err != nil {
				return err
			}
			modes := 0
			for _, given := range []bool{len(ids) > 0, cmd.Flags().Changed("older-than"), all} {
				if given {
					modes++
				}
			}
			if modes != 1 {
				return usagef("give job IDs, --older-than D or --all (exactly one): dlq purge (ID... | --older-than D | --all)")
			}
			if cmd.Flags().Changed("older-than") && olderThan <= 0 {
				return usagef("bad --older-than %s: must be positive (--all purges every dead job)", olderThan)
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readWrite}, func(s *session) error {
				if len(ids) > 0 {
					var ts []target
					for _, id := range ids {
						ts = append(ts, purgeDead(ctx, s, id))
					}
					return a.report(ts, "jobs not purged")
				}
				var n int
				var err error
				if all {
					n, err = s.PurgeAllDead(ctx)
				} else {
					n, err = s.PurgeDeadOlderThan(ctx, olderThan)
				}
				if err != nil {
					return err
				}
				return a.reportAs(targets{Done: n}, "", func() {
					fmt.Fprintf(a.Out, "%d dead %s purged\n", n, plural(n, "job", "jobs"))
				})
			})
		},
	}
	c.Flags().DurationVar(&olderThan, "older-than", 0, "purge the jobs that died more than this long ago, e.g. 72h")
	c.Flags().BoolVar(&all, "all", false, "purge every dead job")
	return c
}

// purgeDead deletes one dead job and says how that went.
func purgeDead(ctx context.Context, s *session, id hopper.ID) target {
	j, err := s.Get(ctx, id)
	if err != nil {
		return failed(id, err)
	}
	if j.State != hopper.StateDead {
		return target{ID: id, State: j.State.String(), Error: fmt.Sprintf("is not dead: it is %s (only dead jobs are purged)", j.State)}
	}
	n, err := s.PurgeDead(ctx, id)
	switch {
	case err != nil:
		return failed(id, err)
	case n == 0:
		return target{ID: id, Error: "not purged: it is no longer dead"}
	}
	return target{ID: id, OK: true, Result: "purged"}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
