package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
)

// printJSON writes v as indented JSON, always valid UTF-8: Go's encoder
// replaces invalid bytes in strings, but copies json.RawMessage values
// (args, results) as they are, and a store may hold bytes written by an
// older or another program. JSON's syntax is ASCII, so invalid bytes can
// only be inside strings, where U+FFFD keeps the document valid.
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := buf.Bytes()
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	_, err := w.Write(b)
	return err
}

// table writes aligned columns; call flush at the end.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(toAny(header)...)
	}
	return t
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func (t *table) row(cells ...any) {
	for i, c := range cells {
		if i > 0 {
			fmt.Fprint(t.tw, "\t")
		}
		s := fmt.Sprint(c)
		fmt.Fprint(t.tw, strings.NewReplacer("\t", " ", "\n", " ").Replace(s))
	}
	fmt.Fprintln(t.tw)
}

func (t *table) flush() error { return t.tw.Flush() }

// clock formats t for tables: local time, with the date only if it is not
// today.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	t = t.Local()
	now := time.Now()
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05")
	}
	return t.Format("2006-01-02 15:04:05")
}

// zclock formats t in loc for tables, always with the zone: the time, with
// the date if it is not today in loc.
func zclock(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	t = t.In(loc)
	now := time.Now().In(loc)
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04:05 MST")
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

// fullTime formats t with its date, zone and how far it is from now.
func fullTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05.000 MST") + " (" + relative(t) + ")"
}

// relative says how far t is from now: "in 5s", "3m ago".
func relative(t time.Time) string {
	d := time.Until(t)
	switch {
	case d > -time.Second && d < time.Second:
		return "now"
	case d > 0:
		return "in " + roughDuration(d)
	default:
		return roughDuration(-d) + " ago"
	}
}

// roughDuration rounds d for humans: 42s, 5m10s, 3h2m, 4d3h.
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		return strings.TrimSuffix(d.Round(time.Second).String(), "0s")
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		days := d / (24 * time.Hour)
		return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
	}
}

// when is the time column of a job listing: when it will run, or ran.
func when(j *hopper.Job) string {
	switch {
	case j.State.Waiting():
		return clock(j.RunAt) + " (" + relative(j.RunAt) + ")"
	case j.State == hopper.StateRunning:
		return "started " + clock(j.StartedAt)
	default:
		return "ended " + clock(j.FinishedAt)
	}
}

// summary is a one-line description of a job's work.
func summary(kind string, args json.RawMessage, max int) string {
	var s string
	switch kind {
	case kinds.KindExec:
		var a kinds.ExecArgs
		if json.Unmarshal(args, &a) == nil && a.Command != "" {
			s = shellQuote(append([]string{a.Command}, a.Args...))
		}
	case kinds.KindHTTP:
		var a kinds.HTTPArgs
		if json.Unmarshal(args, &a) == nil && a.URL != "" {
			m := a.Method
			if m == "" {
				m = "GET"
			}
			s = strings.ToUpper(m) + " " + a.URL
		}
	}
	if s == "" {
		s = string(args)
	}
	return truncate(s, max)
}

// shellQuote joins words as a shell would need them, for display.
func shellQuote(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && !strings.ContainsAny(w, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
			out[i] = w
		} else {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// truncate shortens s to at most max runes (0: no limit), marking the cut.
func truncate(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if max <= 0 || len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printJobsOr prints jobs as JSON with --json, or says empty on stderr when
// there are none, and reports whether it did either; otherwise the caller
// prints its own table.
func (a *app) printJobsOr(jobs []*hopper.Job, empty string) (bool, error) {
	if a.json {
		if jobs == nil {
			jobs = []*hopper.Job{}
		}
		return true, printJSON(a.Out, jobs)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(a.Err, empty)
		return true, nil
	}
	return false, nil
}
