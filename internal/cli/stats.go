package cli

import (
	"fmt"
	"slices"
	"time"

	"github.com/hopperq/hopper/internal/statsview"
	"github.com/hopperq/hopper/job"
	"github.com/spf13/cobra"
)

// statsJSON is stats --json.
type statsJSON struct {
	statsview.Counts
	Finished map[string]int `json:"finished_last_minute"`
	// Throughput is the jobs completed per second in the last minute,
	// measured from the first job finished in it (hopper.Stats).
	Throughput float64 `json:"throughput_per_second"`
}

func (a *app) statsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Count jobs by state and queue, and those finished in the last minute",
		Long: `Count jobs by queue and state, with the waiting and running totals, and the
jobs finished in the last minute with the throughput: jobs completed per
second, measured from the first job finished in that minute (a server that
started 20 seconds ago is not divided by 60).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				st, err := s.Stats(ctx, time.Minute)
				if err != nil {
					return err
				}
				out := statsJSON{Counts: statsview.Of(st), Finished: statsview.Finished(st)}
				out.Throughput = st.Throughput
				if a.json {
					return printJSON(a.Out, out)
				}
				header := []string{"QUEUE"}
				for _, state := range job.States {
					header = append(header, upper(state.String()))
				}
				t := newTable(a.Out, append(header, "TOTAL")...)
				queues := make([]string, 0, len(out.Queues))
				for q := range out.Queues {
					queues = append(queues, q)
				}
				slices.Sort(queues)
				row := func(name string, m map[string]int) {
					cells := []any{name}
					sum := 0
					for _, state := range job.States {
						cells = append(cells, m[state.String()])
						sum += m[state.String()]
					}
					t.row(append(cells, sum)...)
				}
				for _, q := range queues {
					row(q, out.Queues[q])
				}
				if len(queues) != 1 {
					row("(all)", out.Totals)
				}
				if err := t.flush(); err != nil {
					return err
				}
				f := out.Finished
				fmt.Fprintf(a.Out, "\nwaiting %d, running %d\nlast minute: %d completed (%.1f jobs/s), %d dead, %d cancelled\n",
					out.Waiting, out.Running, f["completed"], out.Throughput, f["dead"], f["cancelled"])
				return nil
			})
		},
	}
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
