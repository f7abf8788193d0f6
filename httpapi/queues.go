package httpapi

import (
	"context"
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
	k, err := a.c.Key(r.Context(), name, key)
	if err != nil {
		return err
	}
	reply(w, http.StatusOK, statsview.KeyOf(k))
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
	// Rate throttles the queue's starts: "N/DURATION" ("100/1s") or
	// "none", with Burst (0: 1) and Drop (drop the excess rather than
	// hold it).
	Rate  *string `json:"rate"`
	Burst *int    `json:"burst"`
	Drop  *bool   `json:"drop"`
	// KeyRate throttles the starts of each key of the queue:
	// "N/DURATION" or "none", with KeyBurst (0: 1) and KeyDrop (drop each
	// key's excess rather than hold it).
	KeyRate  *string `json:"key_rate"`
	KeyBurst *int    `json:"key_burst"`
	KeyDrop  *bool   `json:"key_drop"`
}

// keyRate returns the rate per key req sets, if any; key_burst or
// key_drop without key_rate is an error on "key_rate", a bad one on
// "key_rate" or "key_burst".
func (req limitsRequest) keyRate() (*hopper.Rate, error) {
	if req.KeyRate == nil {
		if req.KeyBurst != nil || req.KeyDrop != nil {
			return nil, invalid("key_rate", "give the rate per key with key_burst or key_drop (\"key_rate\": \"10/1s\")")
		}
		return nil, nil
	}
	r, err := store.ParseRate("key_rate", *req.KeyRate)
	if err != nil {
		return nil, err
	}
	if r.N > 0 && req.KeyBurst != nil {
		r.Burst = *req.KeyBurst
	}
	if r.N > 0 && req.KeyDrop != nil {
		r.Drop = *req.KeyDrop
	}
	if err := r.ValidateKey(); err != nil {
		return nil, err
	}
	return &hopper.Rate{N: r.N, Period: r.Period, Burst: r.Burst, Drop: r.Drop}, nil
}

// rate returns the Rate req sets, if any; burst or drop without a rate is
// an error on "rate".
func (req limitsRequest) rate() (*hopper.Rate, error) {
	if req.Rate == nil {
		if req.Burst != nil || req.Drop != nil {
			return nil, invalid("rate", "give the rate with burst or drop (\"rate\": \"100/1s\")")
		}
		return nil, nil
	}
	rt, err := hopper.ParseRate(*req.Rate)
	if err != nil {
		return nil, err
	}
	if rt.N > 0 {
		if req.Burst != nil {
			rt.Burst = *req.Burst
		}
		if req.Drop != nil {
			rt.Drop = *req.Drop
		}
	}
	return &rt, rt.Validate()
}

// setQueueLimits handles POST /queues/{name}/limits: {"concurrency": N}
// sets the queue's limit across every process, {"key_concurrency": N} its
// limit per key (0 removes either); {"rate": "100/1s", "burst": 10,
// "drop": false} its throttle, {"key_rate": "10/1s", "key_burst": 2,
// "key_drop": false} its throttle per key ("none" removes either). Each is optional, but one must
// be given; a bad one changes nothing.
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
	rt, err := req.rate()
	if err != nil {
		return err
	}
	krt, err := req.keyRate()
	if err != nil {
		return err
	}
	if req.Concurrency == nil && req.KeyConcurrency == nil && rt == nil && krt == nil {
		return invalid("concurrency", "give the limit, key_concurrency, the rate or key_rate (0 removes a limit, \"none\" a rate)")
	}
	if req.Concurrency != nil {
		httpauth.Note(r, "queue", name, "concurrency", *req.Concurrency)
	}
	if req.KeyConcurrency != nil {
		httpauth.Note(r, "queue", name, "key_concurrency", *req.KeyConcurrency)
	}
	if rt != nil {
		httpauth.Note(r, "queue", name, "rate", rt.String(), "burst", rt.Burst, "drop", rt.Drop)
	}
	if krt != nil {
		httpauth.Note(r, "queue", name, "key_rate", krt.String(), "key_burst", krt.Burst, "key_drop", krt.Drop)
	}
	return a.setQueue(w, r, func(c *hopper.Client, ctx context.Context, name string) error {
		// The limits checked first: the rates are valid already, so a bad
		// one changes nothing.
		if req.KeyConcurrency != nil {
			if *req.KeyConcurrency < 0 || *req.KeyConcurrency > store.MaxConcurrency {
				return c.SetQueueKeyConcurrency(ctx, name, *req.KeyConcurrency)
			}
		}
		if req.Concurrency != nil && (*req.Concurrency < 0 || *req.Concurrency > store.MaxConcurrency) {
			return c.SetQueueConcurrency(ctx, name, *req.Concurrency)
		}
		if req.Concurrency != nil {
			if err := c.SetQueueConcurrency(ctx, name, *req.Concurrency); err != nil {
				return err
			}
		}
		if req.KeyConcurrency != nil {
			if err := c.SetQueueKeyConcurrency(ctx, name, *req.KeyConcurrency); err != nil {
				return err
			}
		}
		if rt != nil {
			if err := c.SetQueueRate(ctx, name, *rt); err != nil {
				return err
			}
		}
		if krt != nil {
			return c.SetQueueKeyRate(ctx, name, *krt)
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
// does not start (Client.WaitReason), when something holds it
// (statsview.Job).
func (a *api) withWaitReason(r *http.Request, j *hopper.Job) ([]byte, error) {
	why, err := a.c.WaitReason(r.Context(), j)
	if err != nil {
		return nil, err
	}
	return statsview.Job(j, why)
}
