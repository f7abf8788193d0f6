package cli

import (
	"errors"
	"fmt"

	"github.com/hopperq/hopper"

	"github.com/hopperq/hopper/internal/statsview"
	"github.com/spf13/cobra"
)

func (a *app) queueCmd() *cobra.Command {
	return group("queue", "Queues: list them with their counts, pause and resume them, set their limits",
		a.queueListCmd(),
		a.queueSetCmd(),
		a.queuePauseCmd("pause", "Pause a queue: running jobs finish, none of its jobs starts until resumed"),
		a.queuePauseCmd("resume", "Resume a paused queue: its jobs start again at once"),
	)
}

func (a *app) queueListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the queues: paused or active, their jobs by state, the jobs a pause holds",
		Long: `List every queue that has jobs or is paused, by name: its status (active or
paused, and since when), its jobs waiting, running and finished, and HELD,
the jobs ready to run that its pause holds back.

A pause lives in the database: every server working it obeys it, and it
survives restarts, until "hopper queue resume".

--json prints each queue with its counts by state.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				qs, err := s.Queues(ctx)
				if err != nil {
					return err
				}
				views := statsview.QueuesOf(qs)
				if a.json {
					return printJSON(a.Out, views)
				}
				if len(views) == 0 {
					fmt.Fprintln(a.Err, "no queues: no job has been enqueued")
					return nil
				}
				t := newTable(a.Out, "QUEUE", "STATUS", "LIMIT", "WAITING", "HELD", "RUNNING", "COMPLETED", "CANCELLED", "DEAD")
				for _, v := range views {
					status, limit := "active", "-"
					switch {
					case v.Paused:
						status = "paused since " + clock(*v.PausedAt)
					case v.Concurrency > 0 && v.Slots >= v.Concurrency:
						status = "at its limit"
					}
					if v.Concurrency > 0 {
						limit = fmt.Sprintf("%d/%d", v.Slots, v.Concurrency)
					}
					t.row(v.Name, status, limit, v.Waiting, v.Held, v.Running, v.Counts["completed"], v.Counts["cancelled"], v.Counts["dead"])
				}
				return t.flush()
			})
		},
	}
}

func (a *app) queueSetCmd() *cobra.Command {
	var concurrency int
	cmd := &cobra.Command{
		Use:   "set NAME --concurrency N",
		Short: "Set a queue's limits, shared by every server working the database",
		Long: `Set a queue's limits, shared by every server working the database.

--concurrency N caps how many of the queue's jobs run at once across every
server (0 removes the cap). Each claim takes at most the free slots,
counted by the database in the same transaction as every start and end of
a job; a job rescued from a dead server gives its slot back. A server's own
cap (serve --queue NAME:N) still applies within it. Lowering the limit
below the running jobs stops no job: new ones wait until they fall under
it.

Exit code: 0 if the queue has the limits given.`,
		Args: exactArgs(1, "a queue NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			if !cmd.Flags().Changed("concurrency") {
				return usagef("queue set needs --concurrency N (0 removes the limit)")
			}
			return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
				err := s.SetQueueConcurrency(ctx, name, concurrency)
				if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
					if fe.Field == "concurrency" {
						return usagef("bad --concurrency %d: %s", concurrency, fe.Reason)
					}
					return usagef("bad queue NAME %q: %s", name, fe.Reason)
				}
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, map[string]any{"queue": name, "concurrency": concurrency})
				}
				if concurrency == 0 {
					fmt.Fprintf(a.Out, "queue %s: no concurrency limit\n", name)
				} else {
					fmt.Fprintf(a.Out, "queue %s: at most %d running at once across every server\n", name, concurrency)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, "at most N jobs of the queue running at once across every server (0: no limit)")
	return cmd
}

// queuePauseCmd is pause or resume.
func (a *app) queuePauseCmd(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long: short + `.

` + map[string]string{
			"pause": `The pause lives in the database: every server working it stops starting
the queue's jobs at its next claim, and it survives restarts. Jobs already
running finish. A queue need not have jobs to be paused.

Exit code: 0 if the queue is paused (or already was).`,
			"resume": `The servers working the database are woken and start the queue's jobs at
once.

Exit code: 0 if the queue is active (or already was).`,
		}[verb],
		Args: exactArgs(1, "a queue NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, name := cmd.Context(), args[0]
			return a.withSession(ctx, openOpts{access: create}, func(s *session) error {
				qs, err := s.Queues(ctx)
				if err != nil {
					return err
				}
				was := false
				for _, q := range qs {
					if q.Name == name {
						was = q.Paused
					}
				}
				pause := verb == "pause"
				if pause {
					err = s.PauseQueue(ctx, name)
				} else {
					err = s.ResumeQueue(ctx, name)
				}
				if fe := (*hopper.FieldError)(nil); errors.As(err, &fe) {
					return usagef("bad queue NAME %q: %s", name, fe.Reason)
				}
				if err != nil {
					return err
				}
				status := map[bool]string{true: "paused", false: "active"}[pause]
				changed := was != pause
				if a.json {
					return printJSON(a.Out, map[string]any{"queue": name, "status": status, "changed": changed})
				}
				switch {
				case !changed:
					fmt.Fprintf(a.Out, "queue %s already %s\n", name, status)
				case pause:
					fmt.Fprintf(a.Out, "queue %s paused\n", name)
				default:
					fmt.Fprintf(a.Out, "queue %s resumed\n", name)
				}
				return nil
			})
		},
	}
}
