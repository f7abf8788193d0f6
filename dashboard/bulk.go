package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/kinds"
)

// Bulk actions act on the jobs selected in a list (ids) or on every job
// matching the list's filter (all=1). They are confirmed first: a post
// without confirm=1 changes nothing and answers with a page that says
// what would happen and posts again, confirmed. "Every job matching"
// means those with an ID up to the newest matching when the page was
// confirmed, so that jobs enqueued meanwhile are left alone.
//
// A confirmed action runs in the background (bulkRunner, bulkrun.go),
// owned by the handler, whatever becomes of the request: every job
// matching goes through the client's set-based operations
// (CancelMatching, RetryMatching, DeleteMatching: batches of
// hopper.BulkBatch jobs, each one transaction), a selection through
// Cancel, RetryDead and Delete in batches of bulkBatch. The request waits
// up to bulkInline for it: an action done by then ends as the other
// actions do, with a redirect back and a message; a longer one sends the
// browser to its progress page (/bulk).

// MaxBulkIDs bounds the jobs one bulk post may name; "every job matching"
// has no bound.
const MaxBulkIDs = hopper.MaxListLimit

// bulkBatch is the number of selected jobs acted on at a time.
const bulkBatch = 500

// bulkInline is how long a confirmed bulk action's request waits for it
// to end before it sends the browser to the progress page.
const bulkInline = time.Second

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
	if all && f.Tag != "" {
		// The bulk actions select by state, queue and kind; acting on every
		// job "matching" a tagged list would reach jobs it does not show.
		h.done(w, r, true, "Every job matching a tag filter cannot be acted on at once: select the jobs.", back)
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
	var except []string
	if act.name == "retry" {
		if all && !scopeOf(r.Context()).Includes(httpauth.Exec) {
			except = kinds.CommandKinds() // every dead job matching but those: their retry runs commands
			httpauth.Note(r, "except_kinds", except)
		} else if !all && !h.mayRetry(w, r, ids) {
			return
		}
	}
	t := newBulkTask(act, all, f, upto, ids, back)
	t.except = except
	if other := h.bulks.start(t, h.runBulk); other != nil {
		h.setFlash(w, r, true, fmt.Sprintf("Another bulk action is running (%s): start this one when it has finished.", other.snapshot().Summary))
		http.Redirect(w, r, h.url("/bulk"), http.StatusSeeOther)
		return
	}
	h.awaitBulk(w, r, t)
}

// awaitBulk answers the request that started t: once t ends, as other
// actions do (a message, back to the list), or, if it takes longer than
// h.bulkInline, with its progress page. A client that goes away leaves t
// running.
func (h *handler) awaitBulk(w http.ResponseWriter, r *http.Request, t *bulkTask) {
	timer := time.NewTimer(h.bulkInline)
	defer timer.Stop()
	select {
	case <-t.done:
	case <-r.Context().Done():
		return // the action goes on
	case <-timer.C:
		if !t.ended() {
			http.Redirect(w, r, h.url("/bulk"), http.StatusSeeOther)
			return
		}
	}
	v := t.snapshot()
	h.done(w, r, v.Failed || v.Empty, v.Message, t.back)
}

// confirmBulk renders the confirmation page of a bulk action.
func (h *handler) confirmBulk(w http.ResponseWriter, r *http.Request, act bulkAction, all bool, f filter, ids []hopper.ID, back string) {
	v := confirmView{Verb: act.verb, Danger: act.name == "delete", All: all, Applies: act.applies, Back: back}
	if act.name == "retry" && all && !scopeOf(r.Context()).Includes(httpauth.Exec) {
		v.Applies += " Exec jobs and notifications stay dead: retrying them runs commands, which needs an exec or admin token."
	}
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

// runBulk runs t, in the background, under ctx (the runner's: ended by
// Close, not by the request).
func (h *handler) runBulk(ctx context.Context, t *bulkTask) {
	var err error
	if t.all {
		o := hopper.BulkOptions{Queue: t.filter.Queue, Kind: t.filter.Kind, UpTo: t.upto, Progress: func(r hopper.BulkResult) {
			t.progress(r)
			h.hub.poke()
		}}
		if t.filter.State != 0 {
			o.States = []hopper.State{t.filter.State}
		}
		o.All = o.States == nil && o.Queue == "" && o.Kind == ""
		o.ExceptKinds = t.except
		var res hopper.BulkResult
		switch t.act.name {
		case "cancel":
			res, err = h.c.CancelMatching(ctx, o)
		case "retry":
			res, err = h.c.RetryMatching(ctx, o)
		default:
			res, err = h.c.DeleteMatching(ctx, o)
		}
		t.progress(res)
	} else {
		res := hopper.BulkResult{Total: len(t.ids)}
		for batch := range slices.Chunk(t.ids, bulkBatch) {
			if err = context.Cause(ctx); err != nil {
				break
			}
			var k int
			k, err = h.apply(ctx, t.act, batch)
			res.Done += k
			if err != nil {
				break
			}
			res.Skipped += len(batch) - k // the action does not apply to them
			t.progress(res)
			h.hub.poke()
		}
		t.progress(res)
	}
	t.finish(err)
	h.hub.poke()
	v := t.snapshot()
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, hopper.ErrClosed) {
		h.log.Error("dashboard: bulk action", "action", t.act.name, "jobs", v.What, "done", v.Done, "err", err)
	} else {
		h.log.Info("dashboard: bulk action", "action", t.act.name, "jobs", v.What, "done", v.Done, "of", v.Total, "took", v.Took, "err", err)
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
