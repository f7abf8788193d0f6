package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
)

// printJob writes every field of j, its attempt history, result and last
// error, for people.
func printJob(w io.Writer, j *hopper.Job) error {
	t := newTable(w)
	field := func(name string, v any) { t.row(name+":", v) }
	fmt.Fprintf(w, "Job %d\n", j.ID)
	field("kind", j.Kind)
	if s := summary(j.Kind, j.Args, 0); s != "" && s != string(j.Args) {
		field("runs", s)
	}
	field("state", stateLine(j))
	field("queue", j.Queue)
	field("priority", j.Priority)
	field("attempt", fmt.Sprintf("%d of %d", j.Attempt, j.MaxAttempts))
	field("created", fullTime(j.CreatedAt))
	field("run at", fullTime(j.RunAt))
	if !j.StartedAt.IsZero() {
		field("started", fullTime(j.StartedAt))
	}
	if !j.FinishedAt.IsZero() {
		field("finished", fullTime(j.FinishedAt))
	}
	if j.Timeout > 0 {
		field("timeout", j.Timeout)
	}
	field("retry backoff", describeBackoff(j.Retry))
	if j.UniqueKey != "" {
		field("unique key", j.UniqueKey)
	}
	if j.Worker != "" {
		field("worker", j.Worker)
		field("lease until", fullTime(j.LeaseUntil))
	}
	if j.Crashes > 0 {
		field("crashes", fmt.Sprintf("%d in a row (its worker died under it)", j.Crashes))
	}
	if j.Schedule != "" {
		field("schedule", fmt.Sprintf("%s (tick %s)", j.Schedule, fullTime(j.FireTime)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(j.Args) > 0 {
		fmt.Fprintf(w, "\nArgs:\n%s\n", indentJSON(j.Args))
	}
	if len(j.Attempts) > 0 {
		fmt.Fprintln(w, "\nAttempts:")
		at := newTable(w, "  #", "STARTED", "DURATION", "WORKER", "OUTCOME", "BACKOFF", "ERROR")
		for _, a := range j.Attempts {
			backoff := "-"
			if a.Backoff > 0 {
				backoff = a.Backoff.Round(time.Millisecond).String()
			}
			at.row(fmt.Sprintf("  %d", a.Attempt), clock(a.StartedAt), a.Duration.Round(time.Microsecond), orDash(a.Worker), a.Outcome, backoff, orDash(truncate(a.Error, 80)))
		}
		if err := at.flush(); err != nil {
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

func stateLine(j *hopper.Job) string {
	s := j.State.String()
	if j.CancelRequested {
		s += " (cancellation requested)"
	}
	return s
}

// printResult shows an exec or http result readably, others as JSON.
func printResult(w io.Writer, j *hopper.Job) {
	switch j.Kind {
	case kinds.KindExec:
		var r kinds.ExecResult
		if json.Unmarshal(j.Result, &r) == nil {
			fmt.Fprintf(w, "  exit code %d after %s\n", r.ExitCode, r.Duration.D().Round(time.Microsecond))
			if r.StdoutTail != "" {
				fmt.Fprintf(w, "  stdout (last 4 KiB):\n%s\n", indent(strings.TrimRight(r.StdoutTail, "\n")))
			}
			if r.StderrTail != "" {
				fmt.Fprintf(w, "  stderr (last 4 KiB):\n%s\n", indent(strings.TrimRight(r.StderrTail, "\n")))
			}
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

func indentJSON(b []byte) string {
	var buf bytes.Buffer
	if json.Indent(&buf, b, "  ", "  ") != nil {
		return "  " + string(b)
	}
	return "  " + unescapeHTML(buf.String())
}

// unescapeHTML turns the \u003c, \u003e and \u0026 escapes that Go's JSON
// encoder writes for <, > and & back into the characters, for reading.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		if i+5 < len(s) && s[i+1] == 'u' {
			if r, ok := map[string]byte{"003c": '<', "003e": '>', "0026": '&'}[s[i+2:i+6]]; ok {
				b.WriteByte(r)
				i += 5
				continue
			}
		}
		b.WriteString(s[i : i+2]) // an escape pair, copied whole
		i++
	}
	return b.String()
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
