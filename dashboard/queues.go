package dashboard

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/hopperq/hopper"
)

// queueView is one queue on the queues page.
type queueView struct {
	hopper.QueueInfo
	Waiting, Running, Finished int
	// The pages of its jobs, its held jobs and its running jobs.
	JobsURL, HeldURL, RunningURL string
	PauseURL, ResumeURL          string
}

// queues shows every queue (Client.Queues): paused or active, its counts,
// the jobs its pause holds, with pause and resume buttons.
func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	qs, err := h.c.Queues(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	views := make([]queueView, 0, len(qs))
	for _, q := range qs {
		v := queueView{QueueInfo: q, Running: q.Counts[hopper.StateRunning]}
		for st, n := range q.Counts {
			switch {
			case st.Waiting():
				v.Waiting += n
			case st.Finished():
				v.Finished += n
			}
		}
		jobs := h.url("/jobs") + "?queue=" + url.QueryEscape(q.Name)
		v.JobsURL, v.HeldURL, v.RunningURL = jobs, jobs+"&state=available", jobs+"&state=running"
		base := h.url("/queues/" + url.PathEscape(q.Name))
		v.PauseURL, v.ResumeURL = base+"/pause", base+"/resume"
		views = append(views, v)
	}
	h.render(w, r, http.StatusOK, "queues", &page{Title: "Queues", Nav: "queues", Live: true, Data: views})
}

func (h *handler) pauseQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.c.PauseQueue(r.Context(), name); err != nil {
		h.actionFailed(w, r, err, h.url("/queues"))
		return
	}
	h.hub.poke()
	h.done(w, r, false, fmt.Sprintf("Queue %q paused: its running jobs finish, none of its jobs starts until resumed.", name), h.url("/queues"))
}

func (h *handler) resumeQueue(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.c.ResumeQueue(r.Context(), name); err != nil {
		h.actionFailed(w, r, err, h.url("/queues"))
		return
	}
	h.hub.poke()
	h.done(w, r, false, fmt.Sprintf("Queue %q resumed: its jobs start again.", name), h.url("/queues"))
}
