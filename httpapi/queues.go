package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/statsview"
)

// queuesView is the response of GET /queues.
type queuesView struct {
	Queues []statsview.Queue `json:"queues"`
}

// queues handles GET /queues: every queue with jobs or a state (paused),
// by name, with its counts (Client.Queues).
func (a *api) queues(w http.ResponseWriter, r *http.Request) error {
	if err := noBody(r); err != nil {
		return err
	}
	qs, err := a.c.Queues(r.Context())
	if err != nil {
		return err
	}
	reply(w, http.StatusOK, queuesView{Queues: statsview.QueuesOf(qs)})
	return nil
}

// pauseQueue handles POST /queues/{name}/pause; pausing a paused queue
// succeeds. It replies with the queue afterwards.
func (a *api) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	return a.setQueue(w, r, (*hopper.Client).PauseQueue)
}

// resumeQueue handles POST /queues/{name}/resume; resuming an active queue
// succeeds.
func (a *api) resumeQueue(w http.ResponseWriter, r *http.Request) error {
	return a.setQueue(w, r, (*hopper.Client).ResumeQueue)
}

// limitsRequest is the body of POST /queues/{name}/limits.
type limitsRequest struct {
	// Concurrency caps the queue's running jobs across every process (0
	// removes the cap).
	Concurrency *int `json:"concurrency"`
}

// setQueueLimits handles POST /queues/{name}/limits: {"concurrency": N}
// sets the queue's limit across every process (0 removes it).
func (a *api) setQueueLimits(w http.ResponseWriter, r *http.Request) error {
	name, err := scheduleName(r) // a name in the path, checked as any
	if err != nil {
		return err
	}
	b, err := readBody(r)
	if err != nil {
		return err
	}
	var req limitsRequest
	if err := decodeStrict(b, &req, ""); err != nil {
		return err
	}
	if req.Concurrency == nil {
		return invalid("concurrency", "give the limit (0 removes it)")
	}
	httpauth.Note(r, "queue", name, "concurrency", *req.Concurrency)
	return a.setQueue(w, r, func(c *hopper.Client, ctx context.Context, name string) error {
		return c.SetQueueConcurrency(ctx, name, *req.Concurrency)
	})
}

// setQueue runs fn (pause, resume, a limit) on the queue of the path (a
// queue need not have jobs) and replies with it afterwards.
func (a *api) setQueue(w http.ResponseWriter, r *http.Request, fn func(*hopper.Client, context.Context, string) error) error {
	name, err := scheduleName(r) // a name in the path, checked as any
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil { // (read already by setQueueLimits)
		return err
	}
	httpauth.Note(r, "queue", name)
	if err := fn(a.c, r.Context(), name); err != nil {
		return err
	}
	qs, err := a.c.Queues(r.Context())
	if err != nil {
		return err
	}
	v := statsview.QueueOf(hopper.QueueInfo{Name: name})
	for _, q := range qs {
		if q.Name == name {
			v = statsview.QueueOf(q)
		}
	}
	reply(w, http.StatusOK, v)
	return nil
}

// withWaitReason returns j's JSON with wait_reason, why the waiting job
// does not start (Client.WaitReason), when something holds it.
func (a *api) withWaitReason(r *http.Request, j *hopper.Job) ([]byte, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	why, err := a.c.WaitReason(r.Context(), j)
	if err != nil || why == "" || len(b) < 2 || b[len(b)-1] != '}' {
		return b, err
	}
	q, err := json.Marshal(why)
	if err != nil {
		return nil, err
	}
	out := append(b[:len(b)-1:len(b)-1], `,"wait_reason":`...)
	out = append(out, q...)
	return append(out, '}'), nil
}
