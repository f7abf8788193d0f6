package dashboard

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

const deadState = hopper.StateDead

// overviewView is the overview page: queues × states, the cards above
// them and the throughput chart.
type overviewView struct {
	States []hopper.State
	Queues []queueRow
	Totals queueRow

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

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	st, err := h.hub.stats(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	v := overviewView{States: job.States, At: st.At}
	names := make([]string, 0, len(st.Queues))
	for q := range st.Queues {
		names = append(names, q)
	}
	slices.Sort(names)
	v.Totals = queueRow{Name: "All queues", URL: h.url("/jobs")}
	total := make(map[hopper.State]int)
	for _, q := range names {
		row := queueRow{Name: q, URL: h.url("/jobs?" + url.Values{"queue": {q}}.Encode()), Oldest: st.OldestAvailable[q]}
		for _, s := range v.States {
			n := st.Queues[q][s]
			row.Cells = append(row.Cells, countCell{State: s, N: n, URL: h.jobsURL(s, q)})
			row.Total += n
			total[s] += n
		}
		v.Queues = append(v.Queues, row)
		if !row.Oldest.IsZero() && (v.OldestReady.IsZero() || row.Oldest.Before(v.OldestReady)) {
			v.OldestReady, v.OldestQueue = row.Oldest, q
		}
	}
	for _, s := range v.States {
		v.Totals.Cells = append(v.Totals.Cells, countCell{State: s, N: total[s], URL: h.jobsURL(s, "")})
		v.Totals.Total += total[s]
		switch {
		case s.Waiting():
			v.Waiting += total[s]
		case s == hopper.StateRunning:
			v.Running = total[s]
		case s == deadState:
			v.Dead = total[s]
		}
	}
	v.Totals.Oldest = v.OldestReady
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

// sumState adds up the jobs of state s over every queue.
func sumState(queues map[string]map[hopper.State]int, s hopper.State) int {
	n := 0
	for _, byState := range queues {
		n += byState[s]
	}
	return n
}
