package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/kinds"
)

// Actions are POSTs (checked for cross-origin requests and for the
// token's scope before they get here) that end with a redirect back to
// the page they came from and a message (flash) shown there.

// jobPath is the dashboard path of job id.
func (h *handler) jobPath(id hopper.ID) string {
	return h.url("/jobs/" + strconv.FormatInt(int64(id), 10))
}

func (h *handler) cancelJob(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	back := h.jobPath(id)
	cancelled, err := h.c.Cancel(r.Context(), id)
	switch {
	case err != nil:
		h.actionFailed(w, r, err, back)
	case !cancelled:
		h.done(w, r, true, fmt.Sprintf("Job %d has already finished (or is gone): nothing to cancel.", id), back)
	default:
		msg := fmt.Sprintf("Job %d cancelled.", id)
		if j, err := h.c.Get(r.Context(), id); err == nil && j.State == hopper.StateRunning {
			msg = fmt.Sprintf("Cancel requested: job %d is running; its handler is told to stop, and it ends cancelled unless it succeeds first.", id)
		}
		h.hub.poke()
		h.done(w, r, false, msg, back)
	}
}

func (h *handler) retryJob(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	back := h.jobPath(id)
	if !h.mayRetry(w, r, []hopper.ID{id}) {
		return
	}
	n, err := h.c.RetryDead(r.Context(), id)
	switch {
	case err != nil:
		h.actionFailed(w, r, err, back)
	case n == 0:
		h.done(w, r, true, fmt.Sprintf("Job %d was not retried: it is not dead, or another unfinished job holds its unique key.", id), back)
	default:
		h.hub.poke()
		h.done(w, r, false, fmt.Sprintf("Job %d is back in its queue, its attempts reset.", id), back)
	}
}

func (h *handler) rescheduleJob(w http.ResponseWriter, r *http.Request) {
	id, ok := h.jobID(w, r)
	if !ok {
		return
	}
	back := h.jobPath(id)
	// The form is a reschedule request (wire.Reschedule), its run time in
	// the form's own zone and layout.
	var req wire.Reschedule
	if r.PostFormValue("now") != "" {
		req.Delay = new(wire.Duration)
	} else if s := strings.TrimSpace(r.PostFormValue("run_at")); s != "" && s != r.PostFormValue("run_at_was") {
		// The form shows the run time to the minute: sent back as shown,
		// it is left as it is (to the nanosecond), not rounded. It is read
		// in the zone the form names (a form without one: the dashboard's).
		loc := h.loc
		if z := r.PostFormValue("zone"); z != "" {
			var err error
			if loc, err = parseZone(z); err != nil {
				h.done(w, r, true, fmt.Sprintf("Zone %q: %v.", z, err), back)
				return
			}
		}
		t, err := parseLocal(s, loc)
		if err != nil {
			h.done(w, r, true, fmt.Sprintf("Run at %q: want a date and time such as %s.", s, time.Now().In(loc).Format(datetimeLocal)), back)
			return
		}
		at := t.Format(time.RFC3339Nano)
		req.RunAt = &at
	}
	if s := strings.TrimSpace(r.PostFormValue("priority")); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil {
			h.done(w, r, true, fmt.Sprintf("Priority %q: want a whole number (lower runs first).", s), back)
			return
		}
		req.Priority = &p
	}
	var runAt time.Time
	var prio *int
	var err error
	if req.RunAt != nil || req.Delay != nil || req.Priority != nil { // nothing changed: the library says so
		if runAt, prio, err = req.Args(time.Now()); err != nil {
			h.actionFailed(w, r, err, back)
			return
		}
	}
	j, err := h.c.Reschedule(r.Context(), id, runAt, prio)
	switch {
	case errors.Is(err, hopper.ErrNotWaiting):
		h.done(w, r, true, fmt.Sprintf("Job %d has started or finished: it can no longer be rescheduled.", id), back)
	case err != nil:
		h.actionFailed(w, r, err, back)
	default:
		h.hub.poke()
		h.done(w, r, false, fmt.Sprintf("Job %d rescheduled: runs %s (%s), priority %d.", id, ago(j.RunAt, time.Now()), absTime(j.RunAt, h.loc), j.Priority), back)
	}
}

// parseLocal reads a datetime-local value (with or without seconds) in loc.
func parseLocal(s string, loc *time.Location) (time.Time, error) {
	for _, layout := range []string{datetimeLocal, "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}

func (h *handler) pauseSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.c.PauseSchedule(r.Context(), name); err != nil {
		h.actionFailed(w, r, err, h.url("/schedules"))
		return
	}
	h.hub.poke()
	h.done(w, r, false, fmt.Sprintf("Schedule %q paused: it fires no job until resumed.", name), h.url("/schedules"))
}

func (h *handler) resumeSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.c.ResumeSchedule(r.Context(), name); err != nil {
		h.actionFailed(w, r, err, h.url("/schedules"))
		return
	}
	h.hub.poke()
	h.done(w, r, false, fmt.Sprintf("Schedule %q resumed: it fires from its next tick on (missed ticks are not replayed).", name), h.url("/schedules"))
}

// runSchedule runs a schedule now (hopper.Client.RunSchedule), forced if
// the form's force is set, and shows the job it enqueued. An exec
// schedule needs exec scope, as in the API: its job runs a command.
func (h *handler) runSchedule(w http.ResponseWriter, r *http.Request) {
	name, back := r.PathValue("name"), h.url("/schedules")
	sc, err := h.c.GetSchedule(r.Context(), name)
	if err != nil {
		h.actionFailed(w, r, err, back)
		return
	}
	if kinds.RunsCommand(sc.Kind) {
		if _, err := h.auth.Allow(r, httpauth.Exec); err != nil {
			h.refused(w, r, err)
			return
		}
	}
	force := r.PostFormValue("force") != ""
	j, err := h.c.RunSchedule(r.Context(), name, hopper.RunScheduleOptions{Force: force})
	var busy *hopper.ScheduleBusyError
	switch {
	case errors.As(err, &busy) && busy.Buffered:
		h.hub.poke()
		httpauth.Note(r, "schedule", name, "buffered", true)
		h.done(w, r, false, fmt.Sprintf("Schedule %q run buffered: it starts when its previous job %d finishes (overlap %s). Tick \"even if busy\" to run it at once.", name, busy.Job, busy.Overlap), back)
	case errors.As(err, &busy):
		h.done(w, r, true, fmt.Sprintf("Schedule %q not run: its previous job %d is %s and its overlap policy is %s. Tick \"even if busy\" to run it anyway.", name, busy.Job, busy.State, busy.Overlap), back)
	case err != nil:
		h.actionFailed(w, r, err, back)
	default:
		h.hub.poke()
		httpauth.Note(r, "schedule", name, "job", j.ID, "force", force)
		h.setFlash(w, r, false, fmt.Sprintf("Schedule %q run now: job %d enqueued (a manual run).", name, j.ID))
		http.Redirect(w, r, h.jobPath(j.ID), http.StatusSeeOther)
	}
}

// actionFailed ends an action whose call failed, with a message the user
// can act on (the log gets the rest).
func (h *handler) actionFailed(w http.ResponseWriter, r *http.Request, err error, back string) {
	var fe *hopper.FieldError
	msg := "The job store failed; the server's log says why."
	switch {
	case errors.As(err, &fe):
		msg = fe.Error()
	case errors.Is(err, hopper.ErrNotFound):
		msg = "Not found: it may have been deleted."
	case errors.Is(err, hopper.ErrClosed):
		msg = "The job store is closed: the server is stopping."
	default:
		h.log.Error("dashboard: action", "path", r.URL.Path, "err", err)
	}
	h.done(w, r, true, msg, back)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// schedulePath is the anchor of a schedule on the schedules page.
func scheduleAnchor(name string) string { return "schedule-" + url.PathEscape(name) }

// article is "an" before a word that starts with a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// mayRetry reports whether r may retry the jobs ids, and answers it with
// 403 if not: a job that runs a command (kinds.RunsCommand) runs it again
// when retried, which needs the exec scope, as enqueueing it does. A
// job's kind never changes: the check holds when the retry runs.
func (h *handler) mayRetry(w http.ResponseWriter, r *http.Request, ids []hopper.ID) bool {
	if scopeOf(r.Context()).Includes(httpauth.Exec) {
		return true
	}
	id, kind, err := kinds.CommandJob(r.Context(), h.c, ids)
	switch {
	case err != nil:
		h.storeFailed(w, r, err)
		return false
	case id == 0:
		return true
	}
	if _, err := h.auth.Allow(r, httpauth.Exec); err != nil {
		h.fail(w, r, http.StatusForbidden, fmt.Sprintf("Job %d is of kind %s: retrying it runs a command on the server again, which needs an exec or admin token. Nothing was retried.", id, kind))
		return false
	}
	return true
}
