package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/engine"
	"github.com/hopperq/hopper/job"
)

// Workers maps job kinds to their handlers. Register handlers before the
// client starts; a Workers is safe for concurrent use.
type Workers struct {
	mu    sync.RWMutex
	kinds map[string]*kind
}

type kind struct {
	handler engine.Handler
	opts    KindOptions
}

// KindOptions are per-kind settings; zero fields fall back to the client's
// Config, and a job's own EnqueueOptions override them.
type KindOptions struct {
	Queue       string          // default queue for the kind's jobs
	MaxAttempts int             // default max attempts
	Timeout     time.Duration   // default attempt timeout
	Retry       *backoff.Policy // default retry policy
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return &Workers{kinds: make(map[string]*kind)} }

// Register registers fn as the handler of jobs of kind, with args decoded
// from JSON into a T. The handler's first return value, JSON-encoded,
// becomes the job's result; an error fails the attempt (wrap it with
// Permanent to skip the remaining attempts). JobFromContext(ctx) gives the
// job being run.
//
// Args that do not decode into T fail the job permanently: retrying cannot
// fix them. Register panics if kind is empty or already registered, or if
// opts is invalid, as http.HandleFunc does: these are programming errors.
func Register[T any](w *Workers, kind string, fn func(ctx context.Context, args T) (any, error), opts *KindOptions) {
	typ := reflect.TypeFor[T]().String()
	w.register(kind, func(ctx context.Context, j *job.Job) ([]byte, error) {
		var args T
		if len(j.Args) > 0 {
			if err := json.Unmarshal(j.Args, &args); err != nil {
				return nil, Permanent(fmt.Errorf("args: cannot decode into %s: %w", typ, err))
			}
		}
		return encodeResult(fn(ctx, args))
	}, opts)
}

// RegisterRaw registers fn as the handler of jobs of kind, handing it the
// raw JSON args. Otherwise it behaves as Register.
func RegisterRaw(w *Workers, kind string, fn func(ctx context.Context, args json.RawMessage) (any, error), opts *KindOptions) {
	w.register(kind, func(ctx context.Context, j *job.Job) ([]byte, error) {
		return encodeResult(fn(ctx, j.Args))
	}, opts)
}

func (w *Workers) register(name string, h engine.Handler, opts *KindOptions) {
	if name == "" {
		panic("hopper: Register: kind must not be empty")
	}
	var o KindOptions
	if opts != nil {
		o = *opts
		if o.Retry != nil {
			if err := o.Retry.Validate(); err != nil {
				panic(fmt.Sprintf("hopper: Register %q: retry: %v", name, err))
			}
		}
		if o.MaxAttempts < 0 || o.Timeout < 0 {
			panic(fmt.Sprintf("hopper: Register %q: MaxAttempts and Timeout must not be negative", name))
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.kinds[name]; dup {
		panic(fmt.Sprintf("hopper: Register: kind %q registered twice", name))
	}
	w.kinds[name] = &kind{handler: h, opts: o}
}

func (w *Workers) lookup(name string) *kind {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.kinds[name]
}

// Kinds returns the registered kinds, in no particular order.
func (w *Workers) Kinds() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]string, 0, len(w.kinds))
	for k := range w.kinds {
		out = append(out, k)
	}
	return out
}

// encodeResult JSON-encodes a handler's result. A result that cannot be
// encoded fails the attempt permanently: running it again would not help.
func encodeResult(v any, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	switch r := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return r, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, Permanent(fmt.Errorf("result: cannot encode as JSON: %w", err))
	}
	return b, nil
}

// ErrUnknownKind fails an attempt of a job whose kind has no handler in
// this client. It is retried per policy: another deployment may know it.
var ErrUnknownKind = fmt.Errorf("no handler registered for this kind")

// resolve finds the handler and settings for j; it is the engine's Resolver.
func (c *Client) resolve(j *job.Job) (engine.Handler, engine.Settings, error) {
	set := engine.Settings{Timeout: c.cfg.JobTimeout, Retry: *c.cfg.Retry}
	var h engine.Handler
	if j.Func != nil {
		fn := j.Func
		h = func(ctx context.Context, _ *job.Job) ([]byte, error) { return encodeResult(fn(ctx)) }
	} else if k := c.cfg.Workers.lookup(j.Kind); k != nil {
		h = k.handler
		if k.opts.Timeout > 0 {
			set.Timeout = k.opts.Timeout
		}
		if k.opts.Retry != nil {
			set.Retry = *k.opts.Retry
		}
	}
	if j.Timeout > 0 {
		set.Timeout = j.Timeout
	}
	if j.Retry != nil {
		set.Retry = *j.Retry
	}
	if h == nil {
		return nil, set, fmt.Errorf("kind %q: %w", j.Kind, ErrUnknownKind)
	}
	return h, set, nil
}

// JobFromContext returns the job whose handler got ctx, or nil outside a
// handler. Handlers read the attempt number, ID or queue from it.
func JobFromContext(ctx context.Context) *Job { return engine.JobFromContext(ctx) }
