package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/spf13/cobra"
)

func (a *app) jobsOutputCmd() *cobra.Command {
	var attempt int
	var stream string
	cmd := &cobra.Command{
		Use:   "output ID [--attempt N] [--stream stdout|stderr|log]",
		Short: "Print the full output of a job's attempt: its stdout, stderr or log",
		Long: `Print what an attempt of a job wrote, as it was written: an exec job's
command's stdout (the default) or stderr, or the lines a handler logged
through hopper.Logger (--stream log). The attempt is the latest that wrote
anything unless --attempt names one. Each stream is kept up to a cap (1 MiB
by default, hopper serve --output-limit; a log 1,000 lines or 256 KiB): when
bytes were dropped, a note on stderr says how many, and the exit code is
still 0. --json prints every stream of the attempt, as base64 in JSON.

Output can hold secrets (a command's echo of a token, say): reading it
needs the same access as reading the job.`,
		Example: "  hopper jobs output 42\n  hopper jobs output 42 --stream stderr --attempt 2\n  hopper jobs output 42 --stream log",
		Args:    exactArgs(1, "a job ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseID(args[0])
			if err != nil {
				return err
			}
			if attempt < 0 {
				return fmt.Errorf("--attempt %d: want an attempt number from 1 (or 0, the default, for the latest)", attempt)
			}
			probe := job.Output{}
			if _, err := probe.Stream(stream); err != nil {
				return fmt.Errorf("--stream %q: want stdout, stderr or log", stream)
			}
			ctx := cmd.Context()
			return a.withSession(ctx, openOpts{access: readOnly}, func(s *session) error {
				o, err := s.Output(ctx, id, attempt)
				if errors.Is(err, hopper.ErrNotFound) {
					if _, gerr := getJob(ctx, s, id); gerr != nil {
						return gerr
					}
					if attempt > 0 {
						return fmt.Errorf("job %d: attempt %d kept no output (it wrote nothing, has not ended, or its output was pruned)", id, attempt)
					}
					return fmt.Errorf("job %d: no attempt kept any output", id)
				}
				if err != nil {
					return err
				}
				if a.json {
					return printJSON(a.Out, o)
				}
				st, _ := o.Stream(stream)
				if _, err := a.Out.Write(st.Data); err != nil {
					return err
				}
				if note := st.TruncationNote(); note != "" {
					fmt.Fprintf(a.Err, "hopper: job %d attempt %d %s: %s\n", id, o.Attempt, stream, note)
				}
				return nil
			})
		},
	}
	cmd.Flags().IntVar(&attempt, "attempt", 0, "the attempt (default: the latest that wrote anything)")
	cmd.Flags().StringVar(&stream, "stream", "stdout", "stdout, stderr or log")
	return cmd
}

// printOutputs writes what each attempt of a job kept (jobs get): the
// size of each stream and the last lines of the latest log.
func printOutputs(w io.Writer, id hopper.ID, outs []*hopper.Output) error {
	if len(outs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nOutput kept (hopper jobs output %d [--attempt N] [--stream stdout|stderr|log]):\n", id)
	t := newTable(w, "  #", "STDOUT", "STDERR", "LOG")
	for _, o := range outs {
		t.row(fmt.Sprintf("  %d", o.Attempt), streamSize(o.Stdout), streamSize(o.Stderr), logSize(o.Log))
	}
	if err := t.flush(); err != nil {
		return err
	}
	for i := len(outs) - 1; i >= 0; i-- {
		if o := outs[i]; len(o.Log.Data) > 0 {
			fmt.Fprintf(w, "\n  attempt %d:\n", o.Attempt)
			printTail(w, "log", string(o.Log.Data))
			if note := o.Log.TruncationNote(); note != "" {
				fmt.Fprintf(w, "    %s\n", note)
			}
			break
		}
	}
	return nil
}

// streamSize describes a stream's size: "-" if empty, else the bytes
// written, and those kept if fewer.
func streamSize(s job.Stream) string {
	switch {
	case s.Empty():
		return "-"
	case s.Truncated():
		return fmt.Sprintf("%s (%s kept)", byteSize(s.Size), byteSize(int64(len(s.Data))))
	}
	return byteSize(s.Size)
}

// logSize describes a log: its lines kept, and the bytes dropped if any.
func logSize(s job.Stream) string {
	if s.Empty() {
		return "-"
	}
	n := strings.Count(string(s.Data), "\n")
	if s.Truncated() {
		return fmt.Sprintf("%d lines (%s more dropped)", n, byteSize(s.Dropped()))
	}
	return fmt.Sprintf("%d lines", n)
}

// byteSize is n bytes for people: "512 B", "3.2 KiB", "1.0 MiB".
func byteSize(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
