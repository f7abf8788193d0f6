package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsontext"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
)

// printJob writes every field of j, its attempt history, result and last
// error, for people, and why, what holds the waiting job back
// (hopper.Client.WaitReason), if it is not "".
func printJob(w io.Writer, j *hopper.Job, why string) error {
	t := newTable(w)
	field := func(name string, v any) { t.row(name+":", v) }
	fmt.Fprintf(w, "Job %d\n", j.ID)
	field("kind", j.Kind)
	if s := summary(j.Kind, j.Args, 0); s != "" && s != string(j.Args) {
		field("runs", s)
	}
	field("state", stateLine(j))
	if why != "" {
		field("held", why)
	}
	field("queue", j.Queue)
	field("priority", j.Priority)
	field("attempt", attemptLine(j))
	field("created", fullTime(j.CreatedAt))
	field("run at", fullTime(j.RunAt))
	// A waiting job's started time is its last attempt's, which ended:
	// the Attempts table shows it, beside the attempt's outcome.
	if !j.StartedAt.IsZero() && !j.State.Waiting() {
		field("started", fullTime(j.StartedAt))
	}
	if !j.FinishedAt.IsZero() {
		field("finished", fullTime(j.FinishedAt))
	}
	if j.Timeout == hopper.NoTimeout {
		field("timeout", "none (given as 0)")
	} else if j.Timeout > 0 {
		field("timeout", j.Timeout)
	}
	field("retry backoff", wire.DescribeRetry(j.Retry))
	if j.Key != "" {
		field("key", j.Key)
	}
	if j.UniqueKey != "" {
		field("unique key", j.UniqueKey)
	}
	if len(j.Tags) > 0 {
		field("tags", strings.Join(j.Tags, ", "))
	}
	for _, k := range slices.Sorted(maps.Keys(j.Meta)) {
		field("meta "+k, strconv.Quote(j.Meta[k]))
	}
	if j.Worker != "" {
		field("worker", j.Worker)
		field("lease until", fullTime(j.LeaseUntil))
	}
	if j.Crashes > 0 {
		field("crashes", fmt.Sprintf("%d in a row (its worker died under it)", j.Crashes))
	}
	switch {
	case j.Manual():
		field("schedule", fmt.Sprintf("%s (manual run, not a tick)", j.Schedule))
	case j.Schedule != "":
		field("schedule", fmt.Sprintf("%s (tick %s)", j.Schedule, fullTime(j.FireTime)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(j.Args) > 0 {
		fmt.Fprintf(w, "\nArgs:\n%s\n", indentJSON(j.Args))
	}
	if len(j.Attempts) > 0 {
		if err := printAttempts(w, j); err != nil {
			return err
		}
	}
	if len(j.Result) > 0 {
		fmt.Fprintln(w, "\nResult:")
		printResult(w, j)
	}
	if j.LastError != "" {
		fmt.Fprintf(w, "\nLast error:\n%s\n", indent(j.LastError))
	}
	return nil
}

// stateLine is the job's state, with its cancellation request while it
// runs, or when it completed anyway (a cancelled job says nothing more).
func stateLine(j *hopper.Job) string {
	s := j.State.String()
	switch {
	case !j.CancelRequested:
	case j.State == hopper.StateRunning:
		s += " (cancellation requested)"
	case j.State == hopper.StateCompleted:
		s += " (its cancellation was requested while it ran)"
	}
	return s
}

// attemptLine is the "attempt" field: the attempts counted of the
// allowed, and the attempts a shutdown released or the handler snoozed,
// which do not count (a released job shows "attempt 0" above an Attempts
// row numbered 1).
func attemptLine(j *hopper.Job) string {
	s := fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts)
	released, snoozed := 0, 0
	for _, a := range j.Attempts {
		switch a.Outcome {
		case job.OutcomeReleased:
			released++
		case job.OutcomeSnoozed:
			snoozed++
		}
	}
	switch released {
	case 0:
	case 1:
		s += " (+1 released by a shutdown, not counted)"
	default:
		s += fmt.Sprintf(" (+%d released by shutdowns, not counted)", released)
	}
	switch snoozed {
	case 0:
	case 1:
		s += " (+1 snoozed by its handler, not counted)"
	default:
		s += fmt.Sprintf(" (+%d snoozed by its handler, not counted)", snoozed)
	}
	return s
}

// outputLines is how many lines of an exec attempt's stdout and stderr
// jobs get shows; --json has the last 4 KiB.
const outputLines = 10

// attemptResult is the result an attempt recorded: its own (a failed
// attempt's partial result), or the job's for the attempt that completed it.
func attemptResult(j *hopper.Job, i int) json.RawMessage {
	a := j.Attempts[i]
	if len(a.Result) > 0 {
		return a.Result
	}
	if a.Outcome == hopper.StateCompleted.String() { // only one attempt completes a job
		return j.Result
	}
	return nil
}

// execResult decodes an exec job's result, if b is one.
func execResult(b json.RawMessage) (*kinds.ExecResult, bool) {
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' { // "null": no result
		return nil, false
	}
	var r kinds.ExecResult
	if json.Unmarshal(b, &r) != nil {
		return nil, false
	}
	return &r, true
}

// printAttempts writes the attempt history: a table, then for exec jobs
// each attempt's exit code and the last lines of its stdout and stderr.
func printAttempts(w io.Writer, j *hopper.Job) error {
	isExec := j.Kind == kinds.KindExec
	fmt.Fprintln(w, "\nAttempts:")
	header := []string{"  #", "STARTED", "DURATION", "WORKER", "OUTCOME", "BACKOFF"}
	if isExec {
		header = append(header, "EXIT")
	}
	at := newTable(w, append(header, "ERROR")...)
	for i, a := range j.Attempts {
		backoff := "-"
		if a.Backoff > 0 {
			backoff = a.Backoff.Round(time.Millisecond).String()
		}
		cells := []any{fmt.Sprintf("  %d", a.Attempt), clock(a.StartedAt), a.Duration.Round(time.Microsecond), orDash(a.Worker), a.Outcome, backoff}
		if isExec {
			exit := "-"
			if r, ok := execResult(attemptResult(j, i)); ok {
				exit = exitText(r)
			}
			cells = append(cells, exit)
		}
		at.row(append(cells, orDash(truncate(a.Error, 80)))...)
	}
	if err := at.flush(); err != nil {
		return err
	}
	if !isExec {
		return nil
	}
	for i, a := range j.Attempts {
		r, ok := execResult(attemptResult(j, i))
		if !ok {
			continue
		}
		how := "exit code " + exitText(r)
		if r.Signal != "" {
			how = "killed by " + r.Signal
		}
		fmt.Fprintf(w, "\n  attempt %d: %s after %s\n", a.Attempt, how, r.Duration.D().Round(time.Microsecond))
		printTail(w, "stdout", r.StdoutTail)
		printTail(w, "stderr", r.StderrTail)
	}
	return nil
}

// exitText is the EXIT column: the exit code, or the signal that ended the
// command.
func exitText(r *kinds.ExecResult) string {
	if r.Signal != "" {
		return r.Signal
	}
	return fmt.Sprint(r.ExitCode)
}

// printTail writes the last outputLines lines of an output tail.
func printTail(w io.Writer, name, tail string) {
	tail = strings.TrimRight(tail, "\n")
	if tail == "" {
		fmt.Fprintf(w, "    %s: (empty)\n", name)
		return
	}
	lines := strings.Split(tail, "\n")
	head := fmt.Sprintf("%s:", name)
	if len(lines) > outputLines {
		head = fmt.Sprintf("%s (last %d of %d lines kept; the last 4 KiB with --json):", name, outputLines, len(lines))
		lines = lines[len(lines)-outputLines:]
	}
	fmt.Fprintf(w, "    %s\n", head)
	for _, l := range lines {
		fmt.Fprintf(w, "      %s\n", l)
	}
}

// printResult shows an exec or http result readably, others as JSON.
func printResult(w io.Writer, j *hopper.Job) {
	switch j.Kind {
	case kinds.KindExec:
		if r, ok := execResult(j.Result); ok {
			fmt.Fprintf(w, "  exit code %d after %s (its output is under Attempts)\n", r.ExitCode, r.Duration.D().Round(time.Microsecond))
			return
		}
	case kinds.KindHTTP:
		var r kinds.HTTPResult
		if json.Unmarshal(j.Result, &r) == nil {
			fmt.Fprintf(w, "  status %d after %s\n", r.Status, r.Duration.D().Round(time.Microsecond))
			if r.BodyExcerpt != "" {
				fmt.Fprintf(w, "  body (first 4 KiB):\n%s\n", indent(strings.TrimRight(r.BodyExcerpt, "\n")))
			}
			return
		}
	}
	fmt.Fprintln(w, indentJSON(j.Result))
}

// indentJSON indents b for reading (<, > and & as themselves), two
// spaces in.
func indentJSON(b []byte) string {
	out, _ := jsontext.Indent(b, "  ", "  ")
	return "  " + out
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
