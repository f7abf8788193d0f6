package hopper

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/hopperq/hopper/internal/engine"
	"github.com/hopperq/hopper/internal/jsonerr"
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
	opts    EnqueueOptions
	// check reports whether args fit the handler's type (nil: any JSON).
	check func(args json.RawMessage) error
	// mw is the kind's own middleware (Workers.Use).
	mw []Middleware
}

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return &Workers{kinds: make(map[string]*kind)} }

// Register registers fn as the handler of jobs of kind, with args decoded
// from JSON into a T. opts are the kind's default options (see
// EnqueueOptions for how they combine); nil means none. The handler's first
// return value, JSON-encoded, becomes the job's result; an error fails the
// attempt (wrap it with Permanent to skip the remaining attempts), and a
// result returned with an error is kept with the failed attempt.
// JobFromContext(ctx) gives the job being run.
//
// Args must fit T exactly: Enqueue and AddSchedule refuse args that do not
// decode into a T — a wrong type, or a field T does not have — with a
// *FieldError on "args", and a job whose args do not fit (enqueued by
// another process) fails permanently without running fn. So do args
// holding a string that decoding would change rather than give back
// exactly: bytes that are not UTF-8, or a \u escape of a lone UTF-16
// surrogate ("\ud800"), which encoding/json decodes to U+FFFD; the
// reason names the string's path in the args. A job enqueued
// without args gets T's zero value. If *T has a method Validate() error
// (declared on T or on *T; not when T is itself a pointer type), it is
// called on the decoded args too, and args it rejects are refused and fail
// the same way, with its error as the reason: the rules of a kind's args
// then live on their type, and a mistake shows at Enqueue rather than as a
// dead job. Handlers that must accept older or newer shapes of their args
// use RegisterRaw.
//
// Register panics if kind is empty, reserved ("func") or already
// registered, or if opts is invalid, as http.HandleFunc does: these are
// programming errors.
func Register[T any](w *Workers, kind string, fn func(ctx context.Context, args T) (any, error), opts *EnqueueOptions) {
	RegisterChecked(w, kind, fn, nil, opts)
}

// RegisterChecked is Register with one more rule for the args: check is
// called on args that decoded and passed their Validate method, and args it
// rejects are refused and fail exactly as args Validate rejects — a
// *FieldError on "args" at Enqueue, AddSchedule and CheckArgs, with check's
// error as the reason and as its Err (so errors.Is sees through it); a job
// whose args it rejects fails permanently without running fn. It is for
// rules that depend on the program's configuration rather than on the args'
// type alone, such as the commands an operator allows
// (kinds.RegisterWith). check must be safe for concurrent use; a nil check
// makes RegisterChecked the same as Register.
func RegisterChecked[T any](w *Workers, kind string, fn func(ctx context.Context, args T) (any, error), check func(args T) error, opts *EnqueueOptions) {
	typ := reflect.TypeFor[T]().String()
	decode := func(raw json.RawMessage) (T, error) {
		var args T
		if len(raw) > 0 && string(raw) != "null" {
			if why := jsonerr.Inexact(raw); why != "" {
				return args, &jsonerr.ArgsError{Type: typ, Reason: why}
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&args); err != nil {
				return args, &jsonerr.ArgsError{Type: typ, Reason: jsonerr.Describe(err)}
			}
		}
		if v, ok := any(&args).(validator); ok {
			if err := v.Validate(); err != nil {
				return args, err
			}
		}
		if check != nil {
			return args, check(args)
		}
		return args, nil
	}
	checkRaw := func(raw json.RawMessage) error {
		_, err := decode(raw)
		return err
	}
	w.register(kind, func(ctx context.Context, j *job.Job) ([]byte, error) {
		args, err := decode(j.Args)
		if err != nil {
			return nil, Permanent(err)
		}
		return encodeResult(fn(ctx, args))
	}, checkRaw, opts)
}

// validator is implemented by args types that check themselves (Register).
type validator interface{ Validate() error }

// RegisterRaw registers fn as the handler of jobs of kind, handing it the
// raw JSON args, whatever their shape. Otherwise it behaves as Register.
func RegisterRaw(w *Workers, kind string, fn func(ctx context.Context, args json.RawMessage) (any, error), opts *EnqueueOptions) {
	w.register(kind, func(ctx context.Context, j *job.Job) ([]byte, error) {
		return encodeResult(fn(ctx, j.Args))
	}, nil, opts)
}

func (w *Workers) register(name string, h engine.Handler, check func(json.RawMessage) error, opts *EnqueueOptions) {
	if err := job.CheckName("kind", name); err != nil {
		panic("hopper: Register: " + err.Error())
	}
	if name == job.FuncKind {
		panic(`hopper: Register: kind "func" is reserved for closures`)
	}
	var o EnqueueOptions
	if opts != nil {
		o = *opts
		prefix := fmt.Sprintf("Register(%q).", name)
		if err := o.validate(prefix, false); err != nil {
			panic("hopper: " + err.Error())
		}
		if err := o.checkShared(prefix); err != nil {
			panic("hopper: " + err.Error())
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, dup := w.kinds[name]; dup {
		panic(fmt.Sprintf("hopper: Register: kind %q registered twice", name))
	}
	w.kinds[name] = &kind{handler: h, opts: o, check: check}
}

// all returns the registered kinds' records.
func (w *Workers) all() []*kind {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]*kind, 0, len(w.kinds))
	for _, k := range w.kinds {
		out = append(out, k)
	}
	return out
}

func (w *Workers) lookup(name string) *kind {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.kinds[name]
}

// CheckArgs reports whether a job of kind with args would be accepted by
// this registry, as Enqueue checks it: nil for args a kind registered with
// Register decodes and validates, and for any args of a kind registered
// with RegisterRaw; a *FieldError on "args" with the reason otherwise; a
// *FieldError on "kind" matching ErrUnknownKind for a kind not registered.
// It lets a producer without these workers (kinds.ValidateArgs, a program
// reading jobs from a file) refuse bad args before they are enqueued.
func (w *Workers) CheckArgs(kind string, args json.RawMessage) error {
	found, err := w.checkArgs(kind, args)
	if !found {
		return &FieldError{Field: "kind", Reason: fmt.Sprintf("no handler registered for %q", kind), Err: ErrUnknownKind}
	}
	return err
}

// checkArgs is CheckArgs without the error for a kind not registered.
func (w *Workers) checkArgs(kind string, args json.RawMessage) (found bool, err error) {
	k := w.lookup(kind)
	return k != nil, k.checkArgs(args)
}

// checkArgs reports whether args fit the kind k; nil for a nil k (not
// registered).
func (k *kind) checkArgs(args json.RawMessage) error {
	if k != nil && k.check != nil {
		if err := k.check(args); err != nil {
			return &FieldError{Field: "args", Reason: err.Error(), Err: err}
		}
	}
	return nil
}

// Kinds returns the registered kinds, sorted.
func (w *Workers) Kinds() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	out := make([]string, 0, len(w.kinds))
	for k := range w.kinds {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// encodeResult JSON-encodes a handler's result, also when it failed. A
// result that cannot be encoded fails the attempt permanently: running it
// again would not help.
func encodeResult(v any, err error) ([]byte, error) {
	var b []byte
	switch r := v.(type) {
	case nil:
	case json.RawMessage:
		b = r
	default:
		var merr error
		if b, merr = json.Marshal(v); merr != nil && err == nil {
			return nil, Permanent(fmt.Errorf("result: cannot encode as JSON: %w", merr))
		}
	}
	if string(b) == "null" {
		b = nil // a nil pointer or map: no result
	}
	return b, err
}

// checkKind returns a *FieldError (matching ErrUnknownKind) unless this
// client may enqueue jobs of kind with args: a registered kind whose args
// fit, a kind in Config.ExternalKinds, or any kind if the client has no
// workers. kd is kind's registration, as the caller looked it up (nil: not
// registered).
func (c *Client) checkKind(kind string, kd *kind, args json.RawMessage) error {
	if kind == job.FuncKind {
		return &FieldError{Field: "kind", Reason: `"func" is reserved for closures (EnqueueFunc)`}
	}
	if kd != nil {
		return kd.checkArgs(args)
	}
	known := c.cfg.Workers.Kinds()
	if len(known) == 0 || slices.Contains(c.cfg.ExternalKinds, kind) {
		return nil
	}
	return &FieldError{
		Field: "kind",
		Reason: fmt.Sprintf("no handler registered for %q (registered: %s); list kinds that other processes run in Config.ExternalKinds (hopper serve: --external-kinds)",
			kind, quoteList(known)),
		Err: ErrUnknownKind,
	}
}

func quoteList(ss []string) string {
	if len(ss) > 10 {
		return fmt.Sprintf("%q … and %d more", ss[:10], len(ss)-10)
	}
	return fmt.Sprintf("%q", ss)
}

// runnable lists the kinds this client's workers claim: the registered
// ones, and closures.
func (c *Client) runnable() []string {
	return append(c.cfg.Workers.Kinds(), job.FuncKind)
}

// settingsOf returns the settings of an attempt of j, of kind k (nil for
// a kind this client does not run, such as a remote worker's): the job's
// own timeout and retry policy, else its kind's, else the client's.
func (c *Client) settingsOf(k *kind, j *job.Job) engine.Settings {
	o := c.optionsOf(k, &EnqueueOptions{Timeout: j.Timeout, Retry: j.Retry})
	return engine.Settings{Timeout: o.Timeout, Retry: *o.Retry, MaxSnoozes: c.cfg.MaxSnoozes, OutputLimit: c.outputLimit(j.Kind)}
}

// resolve finds the handler and settings for j; it is the engine's Resolver.
// Settings the job leaves unset come from its kind and the client, by
// Client.options.
func (c *Client) resolve(j *job.Job) (engine.Handler, engine.Settings, error) {
	k := c.cfg.Workers.lookup(j.Kind)
	set := c.settingsOf(k, j)
	if j.Func != nil {
		fn := j.Func
		h := engine.Handler(func(ctx context.Context, _ *job.Job) ([]byte, error) { return encodeResult(fn(ctx)) })
		return c.mw.client.wrap(h), set, nil
	}
	if k != nil {
		if kc := c.mw.kinds[k]; kc != nil { // none when no middleware is set
			return kc.handler, set, nil // wrapped in its middleware
		}
		return k.handler, set, nil
	}
	return nil, set, fmt.Errorf("kind %q: %w", j.Kind, ErrUnknownKind)
}

// JobFromContext returns the job whose handler got ctx, or nil outside a
// handler. Handlers read the attempt number, ID or queue from it.
//
// The *Job is valid until the handler returns: the worker pool then reuses
// it for another job, so a handler must neither modify it nor keep it (or
// let a goroutine use it) afterwards; copy the fields it needs (a Job's
// Args, a json.RawMessage, is never overwritten and may be kept).
func JobFromContext(ctx context.Context) *Job { return engine.JobFromContext(ctx) }
