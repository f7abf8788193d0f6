package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
)

func (a *app) serversCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "servers",
		Short: "List the servers working the database: alive or gone, the leader, their running jobs",
		Long: `List the servers working the database — every "hopper serve" (but one with
--workers 0, which only serves HTTP) and every program running a started
Hopper client — earliest start first: ID (the worker name its jobs
carry), host, PID, when it started, its last heart-beat, whether it leads
(runs the retention cleaner, the schedules and the monitor; at most one
does), its workers, the jobs running under it, and its Hopper version.

A server renews its record every few seconds and removes it when it stops
cleanly. One that died, or lost the database, stops beating: it is shown
"gone" once its last heart-beat is 10s old, and the leader drops it an hour
later.

Remote workers — programs in any language running jobs over the HTTP
worker protocol (docs/workers.md) — are listed too: their ID starts with
"remote:", their host is NAME@HOST as they registered, their workers are
their slots.

--json prints the list with alive, leader, running and remote for each
server.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				svs, err := s.Servers(ctx)
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, svs)
				}
				if len(svs) == 0 {
					fmt.Fprintln(a.Err, "no servers: none runs on this database")
					return nil
				}
				t := newTable(a.Out, "ID", "HOST", "PID", "STARTED", "HEARTBEAT", "STATUS", "LEADER", "WORKERS", "RUNNING", "VERSION")
				for _, sv := range svs {
					status, leader := "alive", "-"
					if !sv.Alive {
						status = "gone"
					}
					if sv.Leader {
						leader = "yes"
					}
					t.row(sv.ID, sv.Host, strconv.Itoa(sv.PID), clock(sv.StartedAt), relative(sv.HeartbeatAt), status,
						leader, sv.Workers, sv.Running, sv.Version)
				}
				return t.flush()
			})
		},
	}
}
