package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/statsview"
	"github.com/hopperq/hopper/store"
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
// succeeds. It replies with the queue afterwards. With ?key=K it pauses
// that key of the queue only, and replies with the key.
func (a *api) pauseQueue(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Has("key") {
		return a.setKey(w, r, (*hopper.Client).PauseKey)
	}
	return a.setQueue(w, r, (*hopper.Client).PauseQueue)
}

// resumeQueue handles POST /queues/{name}/resume; resuming an active queue
// succeeds. With ?key=K it resumes that key of the queue.
func (a *api) resumeQueue(w http.ResponseWriter, r *http.Request) error {
	if r.URL.Query().Has("key") {
		return a.setKey(w, r, (*hopper.Client).ResumeKey)
	}
	return a.setQueue(w, r, (*hopper.Client).ResumeQueue)
}

// setKey runs fn (a key's pause or resume) on the queue of the path and
// the key of ?key=, and replies with the key afterwards.
func (a *api) setKey(w http.ResponseWriter, r *http.Request, fn func(*hopper.Client, context.Context, string, string) error) error {
	name, err := scheduleName(r) // a name in the path, checked as any
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	key := r.URL.Query().Get("key")
	httpauth.Note(r, "queue", name, "key", key)
	if err := fn(a.c, r.Context(), name, key); err != nil {
		return err
	}
	ks, err := a.c.Keys(r.Context(), name)
	if err != nil {
		return err
	}
	v := statsview.KeyOf(hopper.KeyInfo{Queue: name, Key: key})
	for _, k := range ks {
		if k.Key == key {
			v = statsview.KeyOf(k)
		}
	}
	reply(w, http.StatusOK, v)
	return nil
}

// limitsRequest is the body of POST /queues/{name}/limits.
type limitsRequest struct {
	// Concurrency caps the queue's running jobs across every process (0
	// removes the cap).
	Concurrency *int `json:"concurrency"`
	// KeyConcurrency caps the running jobs of one key of the queue (0
	// removes the cap).
	KeyConcurrency *int `json:"key_concurrency"`
}

// setQueueLimits handles POST /queues/{name}/limits: {"concurrency": N}
// sets the queue's limit across every process, {"key_concurrency": N} its
// limit per key (0 removes either); at least one is given.
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
	if req.Concurrency == nil && req.KeyConcurrency == nil {
		return invalid("concurrency", "give the limit, key_concurrency or both (0 removes one)")
	}
	if req.Concurrency != nil {
		httpauth.Note(r, "queue", name, "concurrency", *req.Concurrency)
	}
	if req.KeyConcurrency != nil {
		httpauth.Note(r, "queue", name, "key_concurrency", *req.KeyConcurrency)
	}
	return a.setQueue(w, r, func(c *hopper.Client, ctx context.Context, name string) error {
		if req.KeyConcurrency != nil { // checked first: a bad one changes nothing
			if *req.KeyConcurrency < 0 || *req.KeyConcurrency > store.MaxConcurrency {
				return c.SetQueueKeyConcurrency(ctx, name, *req.KeyConcurrency)
			}
		}
		if req.Concurrency != nil {
			if err := c.SetQueueConcurrency(ctx, name, *req.Concurrency); err != nil {
				return err
			}
		}
		if req.KeyConcurrency != nil {
			return c.SetQueueKeyConcurrency(ctx, name, *req.KeyConcurrency)
		}
		return nil
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
