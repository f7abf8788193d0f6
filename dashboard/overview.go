package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

const deadState = hopper.StateDead

// overviewView is the overview page: queues × states, the cards above
// them and the throughput chart. The table shows a page of the queues
// (Options.PageSize, by name) and the totals of all of them.
type overviewView struct {
	States []hopper.State
	Queues []queueRow
	Totals queueRow
	// The page of queues shown: From to To (from 1) of Of, and the links
	// to the pages around it ("" if none).
	From, To, Of     int
	PrevURL, NextURL string

	Waiting, Running, Dead int
	DoneRecent, DeadRecent int // finished in the last statsWindow
	Throughput             float64
	Busy, Workers          int
	OldestReady            time.Time // earliest run-at of a ready job, any queue
	OldestQueue            string
	At                     time.Time // when the counts were taken
	Chart                  chartView
}

type queueRow struct {
	Name   string
	URL    string
	Cells  []countCell
	Total  int
	Oldest time.Time // earliest run-at of the queue's ready jobs
}

type countCell struct {
	State hopper.State
	N     int
	URL   string
}

// overview is the overview page. Its cost does not grow with the number
// of queues, which clients choose: it shows a page of them (qpage, from
// 1), from the counts' sorted names and sums (counts.derive).
func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	c, err := h.hub.counts(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	st := c.derive().stats
	size := h.o.PageSize
	pages := max(1, (len(c.names)+size-1)/size)
	shown := 1 // the page of queues
	if s := r.URL.Query().Get("qpage"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			h.storeFailed(w, r, &hopper.FieldError{Field: "qpage", Reason: fmt.Sprintf("%q is not a page number (from 1)", s)})
			return
		}
		shown = min(n, pages)
	}
	from := (shown - 1) * size
	names := c.names[from:min(from+size, len(c.names))]
	v := overviewView{States: job.States, At: st.At, From: from + 1, To: from + len(names), Of: len(c.names)}
	pageURL := func(n int) string {
		if n == 1 {
			return h.url("/")
		}
		return h.url("/?qpage=" + strconv.Itoa(n))
	}
	if shown > 1 {
		v.PrevURL = pageURL(shown - 1)
	}
	if shown < pages {
		v.NextURL = pageURL(shown + 1)
	}
	for _, q := range names {
		row := queueRow{Name: q, URL: h.url("/jobs?" + url.Values{"queue": {q}}.Encode()), Oldest: st.OldestAvailable[q]}
		for _, s := range v.States {
			n := st.Queues[q][s]
			row.Cells = append(row.Cells, countCell{State: s, N: n, URL: h.jobsURL(s, q)})
			row.Total += n
		}
		v.Queues = append(v.Queues, row)
	}
	v.Totals = queueRow{Name: "All queues", URL: h.url("/jobs"), Oldest: c.oldest}
	v.OldestReady, v.OldestQueue = c.oldest, c.oldestQueue
	for _, s := range v.States {
		n := c.total(s)
		v.Totals.Cells = append(v.Totals.Cells, countCell{State: s, N: n, URL: h.jobsURL(s, "")})
		v.Totals.Total += n
		switch {
		case s.Waiting():
			v.Waiting += n
		case s == hopper.StateRunning:
			v.Running = n
		case s == deadState:
			v.Dead = n
		}
	}
	v.DoneRecent = st.Finished[hopper.StateCompleted]
	v.DeadRecent = st.Finished[deadState]
	v.Throughput = st.Throughput
	pool := h.c.Pool()
	v.Busy, v.Workers = pool.Busy, pool.Workers
	v.Chart = newChart(bucketsOf(st), st.Since, h.loc)
	h.render(w, r, http.StatusOK, "overview", &page{Title: "Overview", Nav: "overview", Live: true, Data: v})
}

// jobsURL is the list of the jobs in state s (any if 0) of queue q (any
// if "").
func (h *handler) jobsURL(s hopper.State, q string) string {
	v := url.Values{}
	if s != 0 {
		v.Set("state", s.String())
	}
	if q != "" {
		v.Set("queue", q)
	}
	if len(v) == 0 {
		return h.url("/jobs")
	}
	return h.url("/jobs?" + v.Encode())
}
