package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
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
	var runAt time.Time
	if r.PostFormValue("now") != "" {
		runAt = time.Now()
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
		runAt = t
	}
	var prio *int
	if s := strings.TrimSpace(r.PostFormValue("priority")); s != "" {
		p, err := strconv.Atoi(s)
		if err != nil {
			h.done(w, r, true, fmt.Sprintf("Priority %q: want a whole number (lower runs first).", s), back)
			return
		}
		prio = &p
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

// Bulk actions act on the jobs selected in a list (ids) or on every job
// matching the list's filter (all=1). They are confirmed first: a post
// without confirm=1 changes nothing and answers with a page that says
// what would happen and posts again, confirmed. "Every job matching"
// means those with an ID up to the newest matching when the page was
// confirmed, so that jobs enqueued meanwhile are left alone; they are
// found by paging through List by ID and acted on by IDs, in batches.

// MaxBulkIDs bounds the jobs one bulk post may name; "every job matching"
// has no bound.
const MaxBulkIDs = hopper.MaxListLimit

// bulkBatch is the number of jobs listed and acted on at a time.
const bulkBatch = 500

type bulkAction struct {
	name    string
	verb    string // "Cancel", for buttons
	past    string // "cancelled"
	applies string // which jobs the action applies to
	scope   httpauth.Scope
}

var bulkActions = map[string]bulkAction{
	"cancel": {"cancel", "Cancel", "cancelled", "Only waiting and running jobs are cancelled (running ones are told to stop); the others are left as they are.", httpauth.Write},
	"retry":  {"retry", "Retry", "retried", "Only dead jobs are retried, with their attempts reset; the others are left as they are.", httpauth.Write},
	"delete": {"delete", "Delete", "deleted", "Only finished jobs (completed, cancelled, dead) are deleted, for good; the others are left as they are.", httpauth.Admin},
}

// confirmView is the confirmation page of a bulk action.
type confirmView struct {
	Verb     string
	Danger   bool
	All      bool
	Describe string
	IDs      []hopper.ID // the first few, to show
	More     int
	N        int
	Counted  bool
	Applies  string
	Hidden   []hiddenField
	Back     string
}

func (h *handler) bulk(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		h.fail(w, r, http.StatusBadRequest, "Bad form.")
		return
	}
	form := r.PostForm
	back := h.local(form.Get("back"), h.url("/jobs"))
	act, ok := bulkActions[form.Get("action")]
	if !ok {
		h.fail(w, r, http.StatusBadRequest, "Unknown action: want cancel, retry or delete.")
		return
	}
	if _, err := h.auth.Allow(r, act.scope); err != nil {
		var se *httpauth.ScopeError
		if errors.As(err, &se) && !se.ReadOnly {
			h.fail(w, r, http.StatusForbidden, fmt.Sprintf("Your token may %s; to %s jobs you need %s %s token.", scopeVerb(se.Have), act.name, article(act.scope.String()), act.scope))
			return
		}
		h.refused(w, r, err)
		return
	}
	httpauth.Note(r, "bulk", act.name)
	all := form.Get("all") == "1"
	f, err := parseFilter(form)
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	var ids []hopper.ID
	if !all {
		if ids, err = parseIDs(form["ids"]); err != nil {
			h.storeFailed(w, r, err)
			return
		}
		if len(ids) == 0 {
			h.done(w, r, true, "Select jobs first (or every job matching the filter).", back)
			return
		}
	}
	if form.Get("confirm") != "1" {
		httpauth.Note(r, "confirmed", false)
		h.confirmBulk(w, r, act, all, f, ids, back)
		return
	}
	if all {
		httpauth.Note(r, "filter", f.describe(), "upto", form.Get("upto"))
	} else {
		httpauth.Note(r, httpauth.IDs(ids))
	}
	upto, err := cursor(form, "upto")
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	if all && upto == 0 {
		h.fail(w, r, http.StatusBadRequest, "Confirm the action on its confirmation page.")
		return
	}
	n, seen, err := h.runBulk(r.Context(), act, all, f, upto, ids)
	h.hub.poke()
	if err != nil {
		h.log.Error("dashboard: bulk", "action", act.name, "done", n, "err", err)
		h.done(w, r, true, fmt.Sprintf("%s stopped after %s of %s jobs: %v", act.verb, num(n), num(seen), err), back)
		return
	}
	msg := fmt.Sprintf("%s %s of %s jobs.", capitalize(act.past), num(n), num(seen))
	if n < seen {
		msg += " " + act.applies
	}
	h.done(w, r, n == 0 && seen > 0, msg, back)
}

// confirmBulk renders the confirmation page of a bulk action.
func (h *handler) confirmBulk(w http.ResponseWriter, r *http.Request, act bulkAction, all bool, f filter, ids []hopper.ID, back string) {
	v := confirmView{Verb: act.verb, Danger: act.name == "delete", All: all, Applies: act.applies, Back: back}
	hidden := []hiddenField{{"action", act.name}, {"back", back}, {"confirm", "1"}}
	if all {
		o := f.options()
		o.Desc, o.Limit = true, 1
		newest, err := h.c.List(r.Context(), o)
		if err != nil {
			h.storeFailed(w, r, err)
			return
		}
		if len(newest) == 0 {
			h.done(w, r, true, "No job matches the filter: nothing to do.", back)
			return
		}
		v.Describe = f.describe()
		// Counted now, not from the page's cached stats (up to StatsMaxAge
		// old): a page that asks "are you sure" must not say "0 jobs" for
		// jobs enqueued a moment ago.
		if n, err := h.c.Count(r.Context(), f.options()); err == nil {
			v.N, v.Counted = n, true
		}
		hidden = append(hidden, hiddenField{"all", "1"}, hiddenField{"upto", strconv.FormatInt(int64(newest[0].ID), 10)})
		for k, vs := range f.values() {
			hidden = append(hidden, hiddenField{k, vs[0]})
		}
	} else {
		v.N, v.Counted = len(ids), true
		v.IDs = ids[:min(len(ids), 20)]
		v.More = len(ids) - len(v.IDs)
		for _, id := range ids {
			hidden = append(hidden, hiddenField{"ids", strconv.FormatInt(int64(id), 10)})
		}
	}
	v.Hidden = hidden
	nav := "jobs"
	if strings.HasPrefix(back, h.url("/dlq")) {
		nav = "dlq"
	}
	h.render(w, r, http.StatusOK, "confirm", &page{Title: act.verb + " jobs?", Nav: nav, Data: v})
}

// runBulk applies act to the jobs ids, or to every job matching f with an
// ID up to upto, and returns how many it changed of how many it looked at.
func (h *handler) runBulk(ctx context.Context, act bulkAction, all bool, f filter, upto hopper.ID, ids []hopper.ID) (n, seen int, err error) {
	if !all {
		for batch := range slices.Chunk(ids, bulkBatch) {
			k, err := h.apply(ctx, act, batch)
			n, seen = n+k, seen+len(batch)
			if err != nil {
				return n, seen, err
			}
		}
		return n, seen, nil
	}
	o := f.options()
	o.Limit = bulkBatch
	for {
		page, err := h.c.List(ctx, o)
		if err != nil {
			return n, seen, err
		}
		batch := make([]hopper.ID, 0, len(page))
		for _, j := range page {
			if j.ID <= upto {
				batch = append(batch, j.ID)
			}
		}
		if len(batch) > 0 {
			k, err := h.apply(ctx, act, batch)
			n, seen = n+k, seen+len(batch)
			if err != nil {
				return n, seen, err
			}
		}
		if len(page) < bulkBatch || len(batch) < len(page) {
			return n, seen, nil
		}
		o.AfterID = page[len(page)-1].ID
	}
}

// apply applies act to the jobs ids and returns how many it changed.
func (h *handler) apply(ctx context.Context, act bulkAction, ids []hopper.ID) (int, error) {
	switch act.name {
	case "cancel":
		n := 0
		for _, id := range ids {
			ok, err := h.c.Cancel(ctx, id)
			if err != nil {
				return n, err
			}
			if ok {
				n++
			}
		}
		return n, nil
	case "retry":
		return h.c.RetryDead(ctx, ids...)
	default:
		return h.c.Delete(ctx, ids...)
	}
}

// parseIDs reads job IDs, each once, at most MaxBulkIDs.
func parseIDs(ss []string) ([]hopper.ID, error) {
	var ids []hopper.ID
	for _, s := range ss {
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
			n, err := strconv.ParseInt(part, 10, 64)
			if err != nil || n <= 0 {
				return nil, &hopper.FieldError{Field: "ids", Reason: fmt.Sprintf("%q is not a job ID", part)}
			}
			ids = append(ids, hopper.ID(n))
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > MaxBulkIDs {
		return nil, &hopper.FieldError{Field: "ids", Reason: fmt.Sprintf("%d jobs selected; at most %d at once (or act on every job matching the filter)", len(ids), MaxBulkIDs)}
	}
	return ids, nil
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
