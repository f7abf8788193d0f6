package cli

import (
	"errors"
	"fmt"

	"github.com/hopperq/hopper"
)

// target is what a command did to one of the jobs it was given. Commands
// that take several IDs act on every one, report each, and exit 1 if any
// failed (docs/cli.md, "Exit codes").
type target struct {
	ID hopper.ID `json:"id"`
	// OK: the job ended in the state the command asks for, or already was.
	OK bool `json:"ok"`
	// State is the job's state afterwards, if it still exists.
	State string `json:"state,omitempty"`
	// Result says what happened when OK, Error why not otherwise.
	Result string `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
}

// failed is the target of a job the command could not act on because of err.
func failed(id hopper.ID, err error) target {
	if errors.Is(err, hopper.ErrNotFound) {
		return target{ID: id, Error: "not found"}
	}
	return target{ID: id, Error: err.Error()}
}

// targets is the JSON of a command on several jobs.
type targets struct {
	Done   int      `json:"done"`   // targets OK
	Failed int      `json:"failed"` // targets not OK
	Jobs   []target `json:"jobs"`
}

// report prints what happened to each target: successes on stdout, failures
// on stderr (and everything as JSON with --json). It returns an error that
// exits 1 if any target failed, summing up as "N of M what" when there were
// several.
func (a *app) report(ts []target, what string) error {
	return a.reportAs(targets{Jobs: ts}, what, nil)
}

// reportAs is report with a head line for people (nil: none), and with
// sum.Done already counting targets acted on as a set (--all) besides the
// jobs listed.
func (a *app) reportAs(sum targets, what string, head func()) error {
	if sum.Jobs == nil {
		sum.Jobs = []target{}
	}
	for _, t := range sum.Jobs {
		if t.OK {
			sum.Done++
		} else {
			sum.Failed++
		}
	}
	if a.json {
		if err := printJSON(a.Out, sum); err != nil {
			return err
		}
	} else if head != nil {
		head()
	}
	for _, t := range sum.Jobs {
		switch {
		case !t.OK:
			fmt.Fprintf(a.Err, "hopper: job %d %s\n", t.ID, t.Error)
		case !a.json:
			fmt.Fprintf(a.Out, "job %d %s\n", t.ID, t.Result)
		}
	}
	switch {
	case sum.Failed == 0:
		return nil
	case len(sum.Jobs) == 1:
		return reportedError{}
	default:
		return reportedError{fmt.Sprintf("%d of %d %s", sum.Failed, len(sum.Jobs), what)}
	}
}
