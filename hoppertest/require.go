package hoppertest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// Expect describes a job an assertion looks for. Kind is required; every
// other field set must match the job, and a zero field matches anything.
type Expect struct {
	Kind string
	// Args, if not nil, must equal the job's args as JSON (objects compared
	// by their members, whatever their order): a value is encoded with
	// encoding/json, a json.RawMessage or []byte taken as JSON.
	Args any
	// Queue, MaxAttempts and UniqueKey, if set, must equal the job's.
	Queue       string
	MaxAttempts int
	UniqueKey   string
	// Priority, if not nil, must equal the job's (0 included).
	Priority *int
	// State, if set, must be the job's.
	State hopper.State
	// RunAt, if set, must equal the job's run-at (time.Time.Equal).
	RunAt time.Time
}

// maxListed bounds the jobs an assertion reads, and the ones a failure
// message lists.
const (
	maxJobs   = 10_000
	maxListed = 10
)

// RequireEnqueued fails tb (Fatalf) unless exactly one job of c's store
// matches want, and returns it. The failure message names the expectation
// and lists the jobs of the kind that were found, with what differs.
func RequireEnqueued(tb testing.TB, c *hopper.Client, want Expect) *hopper.Job {
	tb.Helper()
	jobs, err := jobsOf(c, want.Kind)
	if err != nil {
		tb.Fatalf("hoppertest.RequireEnqueued(%s): %v", want, err)
		return nil
	}
	var match []*hopper.Job
	for _, j := range jobs {
		if want.mismatch(j) == "" {
			match = append(match, j)
		}
	}
	switch len(match) {
	case 1:
		return match[0]
	case 0:
		tb.Fatalf("hoppertest.RequireEnqueued: no job matches %s; %s", want, found(want, jobs))
	default:
		tb.Fatalf("hoppertest.RequireEnqueued: %d jobs match %s, want 1: %s", len(match), want, ids(match))
	}
	return nil
}

// RequireManyEnqueued fails tb (Fatalf) unless the jobs of c's store whose
// kinds want names are, in ID (enqueue) order, one for one the jobs want
// describes, and returns them. Jobs of other kinds are not looked at.
func RequireManyEnqueued(tb testing.TB, c *hopper.Client, want ...Expect) []*hopper.Job {
	tb.Helper()
	kinds := map[string]bool{}
	var names []string
	for _, w := range want {
		if !kinds[w.Kind] {
			kinds[w.Kind] = true
			names = append(names, w.Kind)
		}
	}
	var all []*hopper.Job
	for _, k := range names {
		jobs, err := jobsOf(c, k)
		if err != nil {
			tb.Fatalf("hoppertest.RequireManyEnqueued: %v", err)
			return nil
		}
		all = append(all, jobs...)
	}
	sortByID(all)
	if len(all) != len(want) {
		tb.Fatalf("hoppertest.RequireManyEnqueued: %d jobs of kinds %s, want %d: %s",
			len(all), strings.Join(names, ", "), len(want), describeAll(all))
		return nil
	}
	for i, w := range want {
		if m := w.mismatch(all[i]); m != "" {
			tb.Fatalf("hoppertest.RequireManyEnqueued: job %d of %d (ID %d) does not match %s: %s",
				i+1, len(want), all[i].ID, w, m)
			return nil
		}
	}
	return all
}

// RequireNotEnqueued fails tb (Fatalf) if a job of c's store matches want,
// naming it.
func RequireNotEnqueued(tb testing.TB, c *hopper.Client, want Expect) {
	tb.Helper()
	jobs, err := jobsOf(c, want.Kind)
	if err != nil {
		tb.Fatalf("hoppertest.RequireNotEnqueued(%s): %v", want, err)
		return
	}
	var match []*hopper.Job
	for _, j := range jobs {
		if want.mismatch(j) == "" {
			match = append(match, j)
		}
	}
	if len(match) > 0 {
		tb.Fatalf("hoppertest.RequireNotEnqueued: %d %s %s: %s", len(match), plural(len(match), "job matches", "jobs match"), want, ids(match))
	}
}

// jobsOf reads the jobs of kind, in ID order, at most maxJobs.
func jobsOf(c *hopper.Client, kind string) ([]*hopper.Job, error) {
	if kind == "" {
		return nil, fmt.Errorf("Expect.Kind is empty: name the kind of the job expected")
	}
	var out []*hopper.Job
	var after hopper.ID
	for len(out) < maxJobs {
		page, err := c.List(context.Background(), hopper.ListOptions{Kind: kind, AfterID: after, Limit: 1000})
		if err != nil {
			return nil, fmt.Errorf("list the jobs of kind %q: %w", kind, err)
		}
		out = append(out, page...)
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].ID
	}
	return out, nil
}

// mismatch says how j differs from e ("" if it matches).
func (e Expect) mismatch(j *hopper.Job) string {
	var diffs []string
	differ := func(field string, got, want any) {
		diffs = append(diffs, fmt.Sprintf("%s is %v, want %v", field, got, want))
	}
	if j.Kind != e.Kind {
		differ("kind", j.Kind, e.Kind)
	}
	if e.Args != nil {
		want, err := encode(e.Args)
		switch {
		case err != nil:
			diffs = append(diffs, fmt.Sprintf("expected args cannot be encoded: %v", err))
		case !jsonEqual(j.Args, want):
			differ("args", string(orNull(j.Args)), string(want))
		}
	}
	if e.Queue != "" && j.Queue != e.Queue {
		differ("queue", j.Queue, e.Queue)
	}
	if e.MaxAttempts != 0 && j.MaxAttempts != e.MaxAttempts {
		differ("max attempts", j.MaxAttempts, e.MaxAttempts)
	}
	if e.UniqueKey != "" && j.UniqueKey != e.UniqueKey {
		differ("unique key", fmt.Sprintf("%q", j.UniqueKey), fmt.Sprintf("%q", e.UniqueKey))
	}
	if e.Priority != nil && j.Priority != *e.Priority {
		differ("priority", j.Priority, *e.Priority)
	}
	if e.State != 0 && j.State != e.State {
		differ("state", j.State, e.State)
	}
	if !e.RunAt.IsZero() && !j.RunAt.Equal(e.RunAt) {
		differ("run-at", j.RunAt.UTC().Format(time.RFC3339Nano), e.RunAt.UTC().Format(time.RFC3339Nano))
	}
	return strings.Join(diffs, ", ")
}

// String describes e for messages: kind "send_email" with args {…}, ….
func (e Expect) String() string {
	s := fmt.Sprintf("kind %q", e.Kind)
	if e.Args != nil {
		if b, err := encode(e.Args); err == nil {
			s += " with args " + string(b)
		}
	}
	if e.Queue != "" {
		s += fmt.Sprintf(", queue %q", e.Queue)
	}
	if e.Priority != nil {
		s += fmt.Sprintf(", priority %d", *e.Priority)
	}
	if e.MaxAttempts != 0 {
		s += fmt.Sprintf(", max attempts %d", e.MaxAttempts)
	}
	if e.UniqueKey != "" {
		s += fmt.Sprintf(", unique key %q", e.UniqueKey)
	}
	if e.State != 0 {
		s += ", " + e.State.String()
	}
	if !e.RunAt.IsZero() {
		s += ", run-at " + e.RunAt.UTC().Format(time.RFC3339Nano)
	}
	return s
}

// found describes the jobs of want's kind that did not match it.
func found(want Expect, jobs []*hopper.Job) string {
	if len(jobs) == 0 {
		return fmt.Sprintf("no job of kind %q at all", want.Kind)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s of the kind:", len(jobs), plural(len(jobs), "job", "jobs"))
	for i, j := range jobs {
		if i == maxListed {
			fmt.Fprintf(&b, " (and %d more)", len(jobs)-maxListed)
			break
		}
		fmt.Fprintf(&b, " [job %d: %s]", j.ID, want.mismatch(j))
	}
	return b.String()
}

// describeAll lists jobs by ID, kind and args.
func describeAll(jobs []*hopper.Job) string {
	if len(jobs) == 0 {
		return "none"
	}
	var parts []string
	for i, j := range jobs {
		if i == maxListed {
			parts = append(parts, fmt.Sprintf("and %d more", len(jobs)-maxListed))
			break
		}
		parts = append(parts, fmt.Sprintf("job %d %q %s", j.ID, j.Kind, orNull(j.Args)))
	}
	return strings.Join(parts, "; ")
}

func ids(jobs []*hopper.Job) string {
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = fmt.Sprintf("job %d (%s)", j.ID, j.State)
	}
	return strings.Join(parts, ", ")
}

func sortByID(jobs []*hopper.Job) {
	slices.SortFunc(jobs, func(a, b *hopper.Job) int { return cmp.Compare(a.ID, b.ID) })
}

// encode returns v as JSON: a json.RawMessage or []byte as it is.
func encode(v any) ([]byte, error) {
	switch a := v.(type) {
	case json.RawMessage:
		return a, nil
	case []byte:
		return a, nil
	}
	return json.Marshal(v)
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(orNull(a), &x) != nil || json.Unmarshal(orNull(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// orNull is b, or the JSON null for no args.
func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
