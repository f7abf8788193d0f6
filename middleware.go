package hopper

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hopperq/hopper/internal/engine"
	"github.com/hopperq/hopper/job"
)

// Middleware is a set of functions a client calls around enqueueing and
// working jobs: a plug-in such as tracing is one Middleware. Every field is
// optional. A Middleware is set for every job in Config.Middleware and for
// the jobs of one kind with Workers.Use.
//
// Order: the client's Middleware come first (outside), in the order given,
// then the kind's, in the order given. So the first EnqueueMiddleware of
// Config.Middleware sees a request first and its after function last, and
// the first WorkMiddleware of Config.Middleware is the outermost wrapper of
// the handler. Hooks are called in the same order.
//
// With none set, enqueueing and working cost what they cost without this
// type (BenchmarkMiddlewareNone).
type Middleware struct {
	// Enqueue is called for each job Enqueue, EnqueueMany and their Tx
	// forms are asked to add, before the job is checked and stored.
	Enqueue EnqueueMiddleware
	// Work wraps each attempt's handler call.
	Work WorkMiddleware

	// The hooks observe without wrapping. They must be fast, must not
	// block, and must not keep the *Job they are given after they return
	// (copy what they need; Job.Clone).

	// WorkStart is called in the worker's goroutine before an attempt's
	// handler (and its WorkMiddleware) runs, with the handler's context.
	WorkStart func(ctx context.Context, j *Job)
	// WorkEnd is called in the worker's goroutine after an attempt's
	// handler has returned (or panicked: err then holds the panic and
	// its stack), with what it returned and how long it ran. Whether the
	// job is then completed, retried or dead is decided afterwards; Dead
	// and Config.OnEvent report it.
	WorkEnd func(ctx context.Context, j *Job, err error, took time.Duration)
	// Dead is called for every job this client sends to the dead-letter
	// queue (its workers' and its own maintenance's), where OnDead is.
	Dead func(j *Job)
	// ScheduleFired is called after a recurring schedule, fired by this
	// client, enqueued its job: s is the schedule as it was before the
	// tick, j the job with its ID and FireTime set.
	ScheduleFired func(s *Schedule, j *Job)
}

// EnqueueMiddleware is called for one job about to be enqueued. It may
// change r — its Options, never nil here and a copy of the caller's (its
// Meta a map of its own, never nil, its Tags a slice of its own), and its
// Args — and refuse the job by returning an error: then nothing of the
// call is stored, and the call returns that error (a batch's wrapped with
// the request's index, as a *FieldError's is). ctx is the caller's.
//
// after, if not nil, is called once the call is over, exactly once: with
// the job's result when the store took the batch, else with the error that
// failed the call (another job's refusal included). The after functions of
// a job are called in the reverse order of their middleware, as unwinding
// wrappers would be.
type EnqueueMiddleware func(ctx context.Context, r *EnqueueRequest) (after func(EnqueueResult, error), err error)

// WorkMiddleware wraps the handler call of one attempt of j: it calls next
// to run the rest of the chain and the handler (with ctx or a context
// derived from it; JobFromContext works on both), and returns the error
// the attempt ends with. It may time the call, add values to the context,
// recover a panic of next or change the error; not calling next skips the
// handler, and the attempt ends with the returned error. j is valid until
// it returns and must not be modified.
type WorkMiddleware func(ctx context.Context, j *Job, next func(ctx context.Context) error) error

// Use adds m to the middleware of the jobs of kind, after those already
// added; see Middleware for the order. Call it after Register and before
// a client using w is made (NewClient, Open): a client takes the
// middleware of its kinds when it is made. Use panics if kind is not
// registered.
func (w *Workers) Use(kind string, m ...Middleware) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.kinds[kind]
	if k == nil {
		panic(fmt.Sprintf("hopper: Workers.Use: kind %q is not registered", kind))
	}
	k.mw = append(k.mw, m...)
}

// chain is the middleware of a client, or of one kind under a client: its
// functions in their order.
type chain struct {
	enqueue       []EnqueueMiddleware
	work          []WorkMiddleware
	workStart     []func(context.Context, *Job)
	workEnd       []func(context.Context, *Job, error, time.Duration)
	dead          []func(*Job)
	scheduleFired []func(*Schedule, *Job)
}

// add appends the functions of ms to c.
func (c *chain) add(ms []Middleware) {
	for _, m := range ms {
		if m.Enqueue != nil {
			c.enqueue = append(c.enqueue, m.Enqueue)
		}
		if m.Work != nil {
			c.work = append(c.work, m.Work)
		}
		if m.WorkStart != nil {
			c.workStart = append(c.workStart, m.WorkStart)
		}
		if m.WorkEnd != nil {
			c.workEnd = append(c.workEnd, m.WorkEnd)
		}
		if m.Dead != nil {
			c.dead = append(c.dead, m.Dead)
		}
		if m.ScheduleFired != nil {
			c.scheduleFired = append(c.scheduleFired, m.ScheduleFired)
		}
	}
}

// empty reports whether c holds no function.
func (c *chain) empty() bool {
	return len(c.enqueue) == 0 && !c.wraps() && len(c.dead) == 0 && len(c.scheduleFired) == 0
}

// wraps reports whether c changes how an attempt runs.
func (c *chain) wraps() bool {
	return len(c.work) > 0 || len(c.workStart) > 0 || len(c.workEnd) > 0
}

// middlewares holds a client's chains, made once by NewClient (kinds
// are registered before, Workers.Use called before) and read-only after.
type middlewares struct {
	none   bool                 // no middleware at all, anywhere: the fast path
	client chain                // Config.Middleware
	kinds  map[*kind]*kindChain // the kinds with middleware of their own
	dead   bool                 // some Dead hook is set
}

// kindChain is a kind's chain (the client's followed by the kind's own)
// and its handler wrapped in it.
type kindChain struct {
	chain
	handler engine.Handler
}

// newMiddlewares makes the chains of cfg.
func newMiddlewares(cfg *Config) middlewares {
	m := middlewares{kinds: make(map[*kind]*kindChain)}
	m.client.add(cfg.Middleware)
	m.dead = len(m.client.dead) > 0
	for _, kd := range cfg.Workers.all() {
		kc := &kindChain{chain: m.client.clone()}
		kc.add(kd.mw)
		kc.handler = kc.wrap(kd.handler)
		m.kinds[kd] = kc
		m.dead = m.dead || len(kc.dead) > 0
	}
	// None: no function set anywhere (an empty Middleware, such as a
	// tracer's on no-op providers, counts for nothing).
	m.none = m.client.empty()
	for _, kc := range m.kinds {
		m.none = m.none && kc.empty()
	}
	if m.none {
		m.kinds = nil
	}
	return m
}

// chainOf returns the chain of the jobs of kd (nil: not registered, or
// registered after the client was made).
func (c *Client) chainOf(kd *kind) *chain {
	if kc := c.mw.kinds[kd]; kc != nil {
		return &kc.chain
	}
	return &c.mw.client
}

// clone returns a copy of c whose slices may be appended to.
func (c *chain) clone() chain {
	return chain{
		enqueue:       slices.Clone(c.enqueue),
		work:          slices.Clone(c.work),
		workStart:     slices.Clone(c.workStart),
		workEnd:       slices.Clone(c.workEnd),
		dead:          slices.Clone(c.dead),
		scheduleFired: slices.Clone(c.scheduleFired),
	}
}

// wrap returns h wrapped by ch: the hooks around the work middleware
// around h. h unchanged if ch wraps nothing.
func (ch *chain) wrap(h engine.Handler) engine.Handler {
	if !ch.wraps() {
		return h
	}
	for i := len(ch.work) - 1; i >= 0; i-- {
		mw, next := ch.work[i], h
		h = func(ctx context.Context, j *job.Job) ([]byte, error) {
			var res []byte
			err := mw(ctx, j, func(ctx context.Context) error {
				var err error
				res, err = next(ctx, j)
				return err
			})
			return res, err
		}
	}
	if len(ch.workStart) == 0 && len(ch.workEnd) == 0 {
		return h
	}
	inner, starts, ends := h, ch.workStart, ch.workEnd
	return func(ctx context.Context, j *job.Job) (res []byte, err error) {
		for _, f := range starts {
			f(ctx, j)
		}
		t := time.Now()
		defer func() {
			if r := recover(); r != nil {
				err = engine.Recovered(r)
			}
			took := time.Since(t)
			for _, f := range ends {
				f(ctx, j, err, took)
			}
		}()
		return inner(ctx, j)
	}
}

// beforeEnqueue runs the enqueue middleware of r's kind on a copy of r,
// whose Options it makes non-nil, and returns the copy and the after
// functions to call in order (the middleware's reversed).
func (c *Client) beforeEnqueue(ctx context.Context, r *EnqueueRequest, afters []func(EnqueueResult, error)) (EnqueueRequest, []func(EnqueueResult, error), error) {
	ch := c.chainOf(c.cfg.Workers.lookup(r.Kind))
	cp := *r
	if len(ch.enqueue) == 0 {
		return cp, afters, nil
	}
	var o EnqueueOptions
	if r.Options != nil {
		o = *r.Options
	}
	o.Meta = maps.Clone(o.Meta) // the caller's stay as they were
	if o.Meta == nil {
		o.Meta = make(map[string]string)
	}
	o.Tags = slices.Clone(o.Tags)
	cp.Options = &o
	n := len(afters)
	for _, mw := range ch.enqueue {
		after, err := mw(ctx, &cp)
		if after != nil {
			afters = append(afters, after)
		}
		if err != nil {
			reverse(afters[n:])
			return cp, afters, err
		}
	}
	reverse(afters[n:])
	return cp, afters, nil
}

func reverse[T any](s []T) {
	for i, j := 0, len(s)-1; i < j; i, j = i+1, j-1 {
		s[i], s[j] = s[j], s[i]
	}
}

// hookDead calls the Dead hooks of j's kind (the client's included).
func (c *Client) hookDead(j *Job) {
	for _, f := range c.chainOf(c.cfg.Workers.lookup(j.Kind)).dead {
		f(j)
	}
}

// hookFired calls the ScheduleFired hooks of the kind of sc's job.
func (c *Client) hookFired(sc *Schedule, j *Job) {
	for _, f := range c.chainOf(c.cfg.Workers.lookup(j.Kind)).scheduleFired {
		f(sc, j)
	}
}
