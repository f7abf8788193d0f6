package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/store"
	"github.com/spf13/cobra"
)

const demoSchedule = "demo-tick"

func (a *app) demoCmd() *cobra.Command {
	var duration time.Duration
	c := &cobra.Command{
		Use:   "demo [--duration 30s]",
		Short: "See Hopper work: enqueue a few jobs and a schedule, run them, narrate",
		Long: `A first look at Hopper. On the --db file (default ./hopper.db) it enqueues:
three echo jobs with different priorities (they run in priority order, lower
first), a job delayed by 5s, a job that fails (exit 3) with 3 attempts 1s
apart and so ends in the dead-letter queue, and a recurring schedule firing
"echo tick" every 2s. Then it runs them with one worker, printing every
transition, until all of that has happened (about 6s) or --duration has
passed, stops gracefully and sums up.

It may be run again on the same file: the schedule is replaced, and paused
when the demo ends.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if duration <= 0 {
				return usagef("bad --duration %s: must be positive", duration)
			}
			if err := demoSupported(kinds.ExecSupported, runtime.GOOS); err != nil {
				return err
			}
			again, note := demoAgain(a.self, a.db, cmd.Flags().Changed("db"))
			return a.demo(cmd.Context(), duration, again, note)
		},
	}
	c.Flags().DurationVar(&duration, "duration", 30*time.Second, "the longest the demo runs the jobs")
	return c
}

// demoSupported refuses to run the demo on goos, a system where exec jobs
// cannot run (execSupported false): its jobs are commands. It says so
// before the database is opened, so nothing is created.
func demoSupported(execSupported bool, goos string) error {
	if execSupported {
		return nil
	}
	return fmt.Errorf("hopper demo runs shell commands (exec jobs), which are not supported on %s: they need Unix (Linux or macOS); the other commands, and serve --kinds http, work here", goos)
}

// demoAgain is the command the demo's hints suggest: self (the command as
// it was run), with --db db if the database was given by --db. A URL's
// password shows as xxxxx, as everywhere the command prints a URL, with a
// note to print after them saying so: the hints are printed, and may be
// shared, where the command line was only typed.
func demoAgain(self, db string, dbGiven bool) (again, note string) {
	if !dbGiven {
		return self, ""
	}
	shown := store.Redacted(db)
	if shown != db {
		note = "(xxxxx stands for the password of the --db URL)\n"
	}
	return self + " --db " + shellQuote([]string{shown}), note
}

// demo runs the demo for at most duration; again is the command that runs
// hopper on the same database, for the hints at the end, and note a line
// after them.
func (a *app) demo(ctx context.Context, duration time.Duration, again, note string) error {
	sigs, stop := a.signals()
	defer stop()

	s, err := a.open(ctx, openOpts{access: create, config: func(c *hopper.Config) { c.Concurrency = 1 }})
	if err != nil {
		return err
	}
	defer s.closeQuick()
	out := a.Out
	fmt.Fprintf(out, "Hopper demo on %s: one worker, built-in kinds exec and http, for at most %s.\n\n", s.db.name(), duration)

	sub := s.Subscribe()
	echo := func(words ...string) kinds.ExecArgs { return kinds.ExecArgs{Command: "echo", Args: words} }
	type req struct {
		args any
		opts *hopper.EnqueueOptions
	}
	fixed := backoff.Fixed(time.Second)
	reqs := []req{
		{echo("priority 3, enqueued first"), &hopper.EnqueueOptions{Priority: 3}},
		{echo("priority 1, runs first"), &hopper.EnqueueOptions{Priority: 1}},
		{echo("priority 2"), &hopper.EnqueueOptions{Priority: 2}},
		{echo("delayed by 5s"), &hopper.EnqueueOptions{Delay: 5 * time.Second}},
		{kinds.ExecArgs{Command: "sh", Args: []string{"-c", "echo failing on purpose >&2; exit 3"}},
			&hopper.EnqueueOptions{Priority: 10, MaxAttempts: 3, Retry: &fixed}},
	}
	var ids []hopper.ID
	for _, r := range reqs {
		res, err := s.Enqueue(ctx, kinds.KindExec, r.args, r.opts)
		if err != nil {
			return err
		}
		ids = append(ids, res.ID)
	}
	sc, err := s.AddSchedule(ctx, demoSchedule, hopper.ScheduleOptions{
		Every: 2 * time.Second, Replace: true, Kind: kinds.KindExec, Args: echo("tick"),
		Options: &hopper.EnqueueOptions{MaxAttempts: 1},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s schedule %s added: %s, first at %s\n", clockNow(), demoSchedule, describeSpec(sc), sc.NextRunAt.Local().Format("15:04:05"))
	if err := s.Start(); err != nil {
		return err
	}

	counts := map[hopper.EventType]int{}
	seen := map[hopper.ID][]hopper.EventType{}
	var order []hopper.ID
	timer := time.NewTimer(duration)
	defer timer.Stop()
loop:
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				break loop
			}
			counts[ev.Type]++
			seen[ev.Job.ID] = append(seen[ev.Job.ID], ev.Type)
			if ev.Type == job.EventStarted && ev.Job.Priority >= 1 && ev.Job.Priority <= 3 && ev.Job.ID >= ids[0] && ev.Job.ID <= ids[2] {
				order = append(order, ev.Job.ID)
			}
			fmt.Fprintln(out, describeEvent(ev))
			if slices.Contains(seen[ids[3]], job.EventCompleted) && slices.Contains(seen[ids[4]], job.EventDead) &&
				counts[job.EventEnqueued]-len(reqs) >= 2 {
				fmt.Fprintf(out, "%s all shown: priorities, a delay, retries, the dead-letter queue and two ticks\n", clockNow())
				break loop
			}
		case <-timer.C:
			break loop
		case <-sigs:
			fmt.Fprintln(out, "interrupted")
			break loop
		case <-ctx.Done():
			break loop
		}
	}
	fmt.Fprintf(out, "%s stopping: running jobs may finish (up to 5s)\n", clockNow())
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Stop(stopCtx); err != nil {
		return err
	}
	for ev := range sub.C { // what happened while stopping
		counts[ev.Type]++
		fmt.Fprintln(out, describeEvent(ev))
	}
	if err := s.PauseSchedule(context.Background(), demoSchedule); err != nil {
		return err
	}

	fmt.Fprintf(out, "\nSummary: %d jobs enqueued (%d by the schedule), %d attempts started, %d completed, %d failed and retried, %d dead.\n",
		counts[job.EventEnqueued], counts[job.EventEnqueued]-len(reqs), counts[job.EventStarted],
		counts[job.EventCompleted], counts[job.EventRetrying], counts[job.EventDead])
	switch {
	case slices.Equal(order, []hopper.ID{ids[1], ids[2], ids[0]}):
		fmt.Fprintf(out, "The three echo jobs ran in priority order: jobs %d, %d, %d (priorities 1, 2, 3), not in enqueue order.\n", order[0], order[1], order[2])
	case len(order) > 0:
		fmt.Fprintf(out, "The echo jobs started in the order %v.\n", order)
	}
	failing, err := s.Get(context.Background(), ids[4])
	if err != nil {
		return err
	}
	if failing.State == job.StateDead {
		fmt.Fprintf(out, "Job %d failed %d times, 1s apart, and is now in the dead-letter queue with its attempt history.\n", ids[4], len(failing.Attempts))
	} else {
		fmt.Fprintf(out, "Job %d has failed %d of its %d attempts so far and is %s: %s serve (or a longer --duration) takes it to the dead-letter queue.\n",
			ids[4], len(failing.Attempts), failing.MaxAttempts, failing.State, again)
	}
	fmt.Fprintf(out, "Everything is in %s; the schedule %s is paused (%s schedule resume %s lets %s serve fire it).\n\n", s.db.name(), demoSchedule, again, demoSchedule, again)
	retry := "" // only a dead job can be retried from the dead-letter queue
	if failing.State == job.StateDead {
		retry = fmt.Sprintf(" / %s dlq retry %d", again, ids[4])
	}
	fmt.Fprintf(out, "now try: %[1]s jobs list / %[1]s dlq list\n    and: %[1]s jobs get %[2]d%[3]s / %[1]s stats / %[1]s serve\n%[4]s", again, ids[4], retry, note)
	return nil
}

func clockNow() string { return time.Now().Format("15:04:05") }

// describeEvent is a readable line for one transition.
func describeEvent(ev hopper.Event) string {
	j := ev.Job
	head := fmt.Sprintf("%s job %d %s", ev.At.Local().Format("15:04:05"), j.ID, j.Kind)
	switch ev.Type {
	case job.EventEnqueued:
		s := head + " enqueued"
		if j.Schedule != "" {
			s += " by schedule " + j.Schedule
		}
		s += ": " + summary(j.Kind, j.Args, 60)
		if j.Priority != 0 {
			s += fmt.Sprintf(" (priority %d)", j.Priority)
		}
		if j.RunAt.After(ev.At.Add(500 * time.Millisecond)) {
			s += fmt.Sprintf(", runs at %s", j.RunAt.Local().Format("15:04:05"))
		}
		return s
	case job.EventStarted:
		return fmt.Sprintf("%s started (attempt %d of %d)", head, j.Attempt, j.MaxAttempts)
	case job.EventCompleted:
		s := head + " completed"
		if n := len(j.Attempts); n > 0 {
			s += " in " + j.Attempts[n-1].Duration.Round(time.Millisecond/10).String()
		}
		if o := resultLine(j); o != "" {
			s += ": " + o
		}
		return s
	case job.EventRetrying:
		s := fmt.Sprintf("%s failed (attempt %d of %d): %s", head, j.Attempt, j.MaxAttempts, truncate(j.LastError, 80))
		return s + fmt.Sprintf("; retrying at %s", j.RunAt.Local().Format("15:04:05"))
	case job.EventDead:
		return fmt.Sprintf("%s dead after %d attempts: %s → dead-letter queue", head, j.Attempt, truncate(j.LastError, 80))
	case job.EventReleased:
		return head + " given back by shutdown: waits for the next server"
	case job.EventRescued:
		return head + " rescued: its worker died; it runs again"
	}
	return head + " " + strings.ReplaceAll(string(ev.Type), "_", " ")
}

// resultLine is the first line of an exec job's stdout, quoted.
func resultLine(j *hopper.Job) string {
	if j.Kind != kinds.KindExec || len(j.Result) == 0 {
		return ""
	}
	var r kinds.ExecResult
	if json.Unmarshal(j.Result, &r) != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(r.StdoutTail), "\n")
	if line == "" {
		return ""
	}
	return fmt.Sprintf("%q", truncate(line, 60))
}
