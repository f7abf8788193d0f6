package dashboard

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/kinds"
)

// jobView is the page of one job.
type jobView struct {
	Job      *hopper.Job
	Args     string
	Result   string
	Exec     *execResult // the job's result, when an exec job made it
	Attempts []attemptView
	Schedule string // the schedules page, for jobs fired by one
	// WaitReason says why a waiting job does not start although due
	// (Client.WaitReason: "queue mail paused"); Queues is the queues page.
	WaitReason, Queues string

	CanCancel     bool
	CanRetry      bool
	CanReschedule bool
	CanDelete     bool
	RunAtValue    string // the reschedule form's default, in Zone
	Zone          string // the form's zone: an IANA name or a UTC offset (formZone)
	DeleteIDs     string
}

// attemptView is one attempt, newest first on the page.
type attemptView struct {
	hopper.Attempt
	Seq    int // its place in the history, from 1 (attempt numbers restart after a retry from the DLQ)
	Ended  time.Time
	Exec   *execResult
	Result string
	Failed bool
	Output *outputView // what the attempt wrote, if it kept any
}

// execResult is what the built-in exec kind keeps of a run (package
// kinds, ExecResult): exit code, signal, duration and the output tails.
type execResult struct {
	ExitCode   *int            `json:"exit_code"`
	Signal     string          `json:"signal"`
	Duration   json.RawMessage `json:"duration"`
	StdoutTail *string         `json:"stdout_tail"`
	StderrTail *string         `json:"stderr_tail"`
}

// parseExec returns b as an exec result, or nil if it is not one.
func parseExec(b []byte) *execResult {
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	var e execResult
	if json.Unmarshal(b, &e) != nil || e.ExitCode == nil || (e.StdoutTail == nil && e.StderrTail == nil) {
		return nil
	}
	return &e
}

// Took returns how long the command ran, as the kind wrote it.
func (e *execResult) Took() string {
	var s string
	if json.Unmarshal(e.Duration, &s) == nil {
		if d, err := time.ParseDuration(s); err == nil {
			return dur(d)
		}
		return s
	}
	var secs float64
	if json.Unmarshal(e.Duration, &secs) == nil {
		return dur(time.Duration(secs * float64(time.Second)))
	}
	return ""
}

// Stdout returns the standard output's tail.
func (e *execResult) Stdout() string { return deref(e.StdoutTail) }

// Stderr returns the standard error's tail.
func (e *execResult) Stderr() string { return deref(e.StderrTail) }

// Code returns the exit code.
func (e *execResult) Code() int { return *e.ExitCode }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (h *handler) jobPage(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	j, err := h.c.Get(r.Context(), id)
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	scope := scopeOf(r.Context())
	v := jobView{Job: j, Args: pretty(j.Args), Queues: h.url("/queues")}
	if v.WaitReason, err = h.c.WaitReason(r.Context(), j); err != nil {
		h.storeFailed(w, r, err)
		return
	}
	if j.Result != nil {
		v.Exec = parseExec(j.Result)
		if v.Exec == nil {
			v.Result = pretty(j.Result)
		}
	}
	var outs []*hopper.Output
	if len(j.Attempts) > 0 { // a job that never ran wrote nothing
		if outs, err = h.c.Outputs(r.Context(), id); err != nil {
			h.storeFailed(w, r, err)
			return
		}
	}
	// An attempt number's output is its latest run's (attempt numbers
	// restart after a retry from the dead-letter queue).
	byAttempt := make(map[int]*hopper.Output, len(outs))
	for _, o := range outs {
		byAttempt[o.Attempt] = o
	}
	for i, a := range slices.Backward(j.Attempts) {
		av := attemptView{Attempt: a, Seq: i + 1, Failed: a.Error != ""}
		if o := byAttempt[a.Attempt]; o != nil {
			av.Output = h.newOutputView(id, o)
			delete(byAttempt, a.Attempt)
		}
		if !a.StartedAt.IsZero() && a.Duration > 0 {
			av.Ended = a.StartedAt.Add(a.Duration)
		}
		if a.Result != nil {
			if av.Exec = parseExec(a.Result); av.Exec == nil {
				av.Result = pretty(a.Result)
			}
		}
		v.Attempts = append(v.Attempts, av)
	}
	if j.Schedule != "" {
		v.Schedule = h.url("/schedules#" + scheduleAnchor(j.Schedule))
	}
	if scope >= httpauth.Write {
		v.CanCancel = (j.State.Waiting() || j.State == hopper.StateRunning) && !j.CancelRequested
		// A dead job that runs a command runs it again when retried: that
		// needs the exec scope (mayRetry).
		v.CanRetry = j.State == deadState && (scope.Includes(httpauth.Exec) || !kinds.RunsCommand(j.Kind))
		v.CanReschedule = j.State.Waiting()
	}
	v.CanDelete = scope >= httpauth.Admin && j.State.Finished()
	v.DeleteIDs = strconv.FormatInt(int64(j.ID), 10)
	at := j.RunAt
	if at.Before(time.Now()) {
		at = time.Now()
	}
	zone, loc := formZone(h.loc, at)
	v.Zone, v.RunAtValue = zone, at.In(loc).Format(datetimeLocal)
	h.render(w, r, http.StatusOK, "job", &page{Title: "Job " + strconv.FormatInt(int64(j.ID), 10), Nav: "jobs", Live: true, Data: v})
}

// datetimeLocal is the format of an HTML datetime-local input.
const datetimeLocal = "2006-01-02T15:04"

// jobID reads the {id} of a job's path, answering 404 if it is not one.
func (h *handler) jobID(w http.ResponseWriter, r *http.Request) (hopper.ID, bool) {
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		h.fail(w, r, http.StatusNotFound, "No such job.")
		return 0, false
	}
	return hopper.ID(n), true
}
