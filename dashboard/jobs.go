package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// filter is what a job list shows: jobs of a state, queue and kind (zero
// fields: any).
type filter struct {
	State hopper.State
	Queue string
	Kind  string
	Tag   string
}

// parseFilter reads a list's filter from a query or a form.
func parseFilter(v url.Values) (filter, error) {
	f := filter{Queue: strings.TrimSpace(v.Get("queue")), Kind: strings.TrimSpace(v.Get("kind")), Tag: strings.TrimSpace(v.Get("tag"))}
	if s := strings.TrimSpace(v.Get("state")); s != "" && s != "all" {
		st, err := job.ParseState(s)
		if err != nil {
			return f, &hopper.FieldError{Field: "state", Reason: err.Error()}
		}
		f.State = st
	}
	return f, nil
}

// values is f as query parameters.
func (f filter) values() url.Values {
	v := url.Values{}
	if f.State != 0 {
		v.Set("state", f.State.String())
	}
	if f.Queue != "" {
		v.Set("queue", f.Queue)
	}
	if f.Kind != "" {
		v.Set("kind", f.Kind)
	}
	if f.Tag != "" {
		v.Set("tag", f.Tag)
	}
	return v
}

// options are the ListOptions of f.
func (f filter) options() hopper.ListOptions {
	o := hopper.ListOptions{Queue: f.Queue, Kind: f.Kind, Tag: f.Tag}
	if f.State != 0 {
		o.States = []hopper.State{f.State}
	}
	return o
}

// describe says in words what f selects: "dead jobs of queue emails".
func (f filter) describe() string {
	var b strings.Builder
	if f.State != 0 {
		b.WriteString(f.State.String() + " jobs")
	} else {
		b.WriteString("jobs")
	}
	if f.Kind != "" {
		b.WriteString(" of kind " + strconv.Quote(f.Kind))
	}
	if f.Queue != "" {
		b.WriteString(" in queue " + strconv.Quote(f.Queue))
	}
	return b.String()
}

// count returns how many jobs f selects, from the cached counts, when the
// counts can tell (they are by queue and state, not by kind). It looks at
// f's queue only, or at the sums over every queue: what a list costs does
// not grow with the number of queues.
func (f filter) count(c *counts) (int, bool) {
	if f.Kind != "" {
		return 0, false
	}
	byState := c.derive().totals
	if f.Queue != "" {
		byState = c.stats.Queues[f.Queue]
	}
	if f.State != 0 {
		return byState[f.State], true
	}
	n := 0
	for _, k := range byState {
		n += k
	}
	return n, true
}

// jobsView is a page of a job list.
type jobsView struct {
	DLQ     bool
	Filter  filter
	Search  string // the search box
	Missing string // a searched job ID that does not exist
	Tabs    []stateTab
	Queues  []string // the filter's menu of queues, if QueueMenu
	// QueueMenu is false when there are too many queues for a menu: the
	// filter then takes a queue's name typed in.
	QueueMenu bool
	Rows      []jobRow
	Count     int
	Counted   bool
	NewerURL  string
	OlderURL  string
	FirstURL  string
	Hidden    []hiddenField // the filter, for the bulk form
	Actions   bulkButtons
}

type stateTab struct {
	Label   string
	URL     string
	N       int
	Counted bool
	Active  bool
	Class   string
}

type jobRow struct {
	*hopper.Job
	URL      string
	When     time.Time
	WhenVerb string
}

type hiddenField struct{ Name, Value string }

// bulkButtons say which bulk actions a list offers.
type bulkButtons struct {
	Cancel, Retry, Delete bool
}

// jobs is the job list: filtered by state, queue and kind, newest first,
// paged by ID (keyset paging: "after" shows the jobs below an ID, "before"
// those above one), never by offset and never with a count of the store.
func (h *handler) jobs(w http.ResponseWriter, r *http.Request) {
	h.jobList(w, r, false)
}

// dlq is the dead-letter queue: the list of dead jobs, with their errors.
func (h *handler) dlq(w http.ResponseWriter, r *http.Request) {
	h.jobList(w, r, true)
}

func (h *handler) jobList(w http.ResponseWriter, r *http.Request, dlq bool) {
	q := r.URL.Query()
	f, err := parseFilter(q)
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	v := jobsView{DLQ: dlq}
	if dlq {
		f.State = deadState
	}
	if s := strings.TrimSpace(q.Get("q")); s != "" {
		v.Search = s
		if id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64); err == nil {
			if _, err := h.c.Get(r.Context(), hopper.ID(id)); err == nil {
				http.Redirect(w, r, h.url("/jobs/"+strconv.FormatInt(id, 10)), http.StatusSeeOther)
				return
			} else if !errors.Is(err, hopper.ErrNotFound) {
				h.storeFailed(w, r, err)
				return
			}
			v.Missing = s
		} else {
			f.Kind = s
		}
	}
	v.Filter = f
	after, err1 := cursor(q, "after")
	before, err2 := cursor(q, "before")
	if err := errors.Join(err1, err2); err != nil {
		h.storeFailed(w, r, err)
		return
	}
	size := h.o.PageSize
	if v.Missing == "" {
		o := f.options()
		o.Limit = size + 1
		if before > 0 {
			o.AfterID = before // ascending from the cursor, then reversed
		} else {
			o.Desc, o.AfterID = true, after
		}
		list, err := h.c.List(r.Context(), o)
		if err != nil {
			h.storeFailed(w, r, err)
			return
		}
		more := len(list) > size
		list = list[:min(len(list), size)]
		if before > 0 {
			slices.Reverse(list)
		}
		for _, j := range list {
			v.Rows = append(v.Rows, h.row(j))
		}
		base := f.values()
		page := func(key string, id hopper.ID) string {
			p := url.Values{}
			for k, vs := range base {
				p[k] = vs
			}
			p.Set(key, strconv.FormatInt(int64(id), 10))
			return h.listURL(dlq, p)
		}
		if n := len(list); n > 0 {
			newest, oldest := list[0].ID, list[n-1].ID
			if (before > 0 && more) || after > 0 {
				v.NewerURL = page("before", newest)
			}
			if (before == 0 && more) || before > 0 {
				v.OlderURL = page("after", oldest)
			}
		}
		if after > 0 || before > 0 {
			v.FirstURL = h.listURL(dlq, base)
		}
	}
	c, err := h.hub.counts(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	v.Count, v.Counted = f.count(c)
	if !dlq {
		v.Tabs = h.tabs(f, c)
	}
	v.Queues, v.QueueMenu = queueMenu(c, f.Queue)
	for k, vs := range f.values() {
		v.Hidden = append(v.Hidden, hiddenField{k, vs[0]})
	}
	slices.SortFunc(v.Hidden, func(a, b hiddenField) int { return strings.Compare(a.Name, b.Name) })
	v.Actions = bulkButtons{
		Cancel: f.State == 0 || f.State.Waiting() || f.State == hopper.StateRunning,
		Retry:  f.State == 0 || f.State == deadState,
		Delete: f.State == 0 || f.State.Finished(),
	}
	title, nav := "Jobs", "jobs"
	if dlq {
		title, nav = "Dead-letter queue", "dlq"
	}
	h.render(w, r, http.StatusOK, "jobs", &page{Title: title, Nav: nav, Live: true, Data: v})
}

// cursor reads a paging cursor: a job ID, or 0 if absent.
func cursor(q url.Values, key string) (hopper.ID, error) {
	s := q.Get(key)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, &hopper.FieldError{Field: key, Reason: "want a job ID"}
	}
	return hopper.ID(n), nil
}

// listURL is the URL of the job list (or the dead-letter queue) with
// query v.
func (h *handler) listURL(dlq bool, v url.Values) string {
	path := "/jobs"
	if dlq {
		path = "/dlq"
		v.Del("state")
	}
	if len(v) == 0 {
		return h.url(path)
	}
	return h.url(path + "?" + v.Encode())
}

// tabs are the list's state filters, with their counts.
func (h *handler) tabs(f filter, c *counts) []stateTab {
	all := f
	all.State = 0
	n, counted := all.count(c)
	tabs := []stateTab{{Label: "All", URL: h.listURL(false, all.values()), N: n, Counted: counted, Active: f.State == 0}}
	for _, s := range job.States {
		g := f
		g.State = s
		n, counted := g.count(c)
		tabs = append(tabs, stateTab{Label: s.String(), URL: h.listURL(false, g.values()), N: n, Counted: counted,
			Active: f.State == s, Class: "st-" + s.String()})
	}
	return tabs
}

// maxQueueMenu bounds the queues the filter's menu lists; with more, the
// filter takes a queue's name typed in instead.
const maxQueueMenu = 100

// queueMenu lists the queues for the filter's menu: those with jobs, and
// the current one; ok is false when there are more than maxQueueMenu, and
// the filter takes a name typed in.
func queueMenu(c *counts, current string) (names []string, ok bool) {
	names = c.derive().names
	if len(names) > maxQueueMenu {
		return nil, false
	}
	if current == "" || slices.Contains(names, current) {
		return names, true
	}
	qs := append(slices.Clip(names), current) // a copy: names are shared
	slices.Sort(qs)
	return qs, true
}

// row is a job as a list shows it, with the time that matters in its
// state.
func (h *handler) row(j *hopper.Job) jobRow {
	r := jobRow{Job: j, URL: h.url("/jobs/" + strconv.FormatInt(int64(j.ID), 10))}
	switch {
	case j.State == hopper.StateAvailable:
		r.When, r.WhenVerb = j.RunAt, "ready"
	case j.State.Waiting():
		r.When, r.WhenVerb = j.RunAt, "runs"
	case j.State == hopper.StateRunning:
		r.When, r.WhenVerb = j.StartedAt, "started"
	default:
		r.When, r.WhenVerb = j.FinishedAt, "finished"
	}
	return r
}
