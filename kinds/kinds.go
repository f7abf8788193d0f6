// Package kinds holds Hopper's built-in job kinds, the ones the hopper
// command runs: "exec", which runs a command (on Unix only: see
// ExecSupported), and "http", which makes an HTTP request. Register them on a hopper.Workers to run them in a program
// of your own (RegisterWith applies an operator's policy: which kinds, and
// what exec commands may run, as whom, with which environment), and call
// Supervise first thing in that program's main, so that the commands of
// exec jobs die with it. See docs/kinds.md and docs/security.md.
package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsonerr"
)

// Register registers the built-in kinds, KindExec and KindHTTP, on w,
// with the default Options and no default enqueue options. Their handlers
// are Exec and HTTP: a job's result is an *ExecResult or an *HTTPResult,
// also kept with a failed attempt when the command ran or a response came.
// Their args are checked at Enqueue and AddSchedule: args that do not
// decode strictly into ExecArgs or HTTPArgs (an unknown field, a wrong
// type) or that their Validate rejects are refused with a
// *hopper.FieldError on "args"; such a job enqueued by a process that does
// not register these kinds fails permanently.
//
// A program that registers KindExec must call Supervise first in main.
func Register(w *hopper.Workers) {
	if err := RegisterWith(w, Options{}); err != nil {
		panic("kinds: Register: " + err.Error()) // the defaults are valid
	}
}

// RegisterWith registers the built-in kinds that o offers on w, with o's
// policies, as Register does with the defaults. Jobs outside a policy are
// refused at Enqueue and AddSchedule with a *hopper.FieldError on "args"
// saying why, and a job outside it that is already stored (enqueued by
// another process, or before the policy changed) fails permanently when
// it runs. It returns the error of Options.Validate, registering nothing,
// if o is not valid; it panics, as hopper.Register does, if one of the
// kinds is already registered on w.
//
// A program that offers KindExec must call Supervise first in main.
func RegisterWith(w *hopper.Workers, o Options) error {
	c, err := o.compile()
	if err != nil {
		return err
	}
	for _, k := range c.kinds {
		switch k {
		case KindExec:
			r := c.exec
			var check func(ExecArgs) error
			if r.allow != nil {
				check = r.check
			}
			hopper.RegisterChecked(w, KindExec, func(ctx context.Context, a ExecArgs) (any, error) {
				return result(r.run(ctx, a, supervisorAvailable.Load()))
			}, check, nil)
		case KindHTTP:
			h := c.http
			hopper.RegisterChecked(w, KindHTTP, func(ctx context.Context, a HTTPArgs) (any, error) {
				return result(h.Run(ctx, a))
			}, h.checkPolicy, nil)
		}
	}
	return nil
}

// result turns a handler's typed result into an untyped one, a nil pointer
// into no result at all (rather than a JSON null kept with the attempt).
func result[R any](r *R, err error) (any, error) {
	if r == nil {
		return nil, err
	}
	return r, err
}

// ValidateArgs checks the args of a job of a built-in kind as Enqueue on a
// client with these kinds registered by Register does; it is
// Options{}.ValidateArgs.
func ValidateArgs(kind string, raw json.RawMessage) error {
	return Options{}.ValidateArgs(kind, raw)
}

// ValidateArgs checks the args of a job of a built-in kind as Enqueue on a
// client with these kinds registered by RegisterWith(w, o) does
// (hopper.Workers.CheckArgs: they must decode strictly into ExecArgs or
// HTTPArgs, pass its Validate, and fit o's policy), so that a producer
// without the workers sees a mistake at enqueue time rather than as a dead
// job. Args holding a string that decoding would not give back exactly —
// bytes that are not UTF-8, a \u escape of a lone UTF-16 surrogate — are
// refused, naming the field (Register's rule). A built-in kind o does not
// offer is refused; args of other kinds are not checked. Of o's policy,
// only what applies at enqueue is used (Kinds, Exec.Allow, HTTP.Allow: a
// URL whose host is a refused address), and reported
// as Options.Validate reports it if invalid.
func (o Options) ValidateArgs(kind string, raw json.RawMessage) error {
	if kind != KindExec && kind != KindHTTP {
		return nil
	}
	offered, err := o.offered()
	if err != nil {
		return err
	}
	if !slices.Contains(offered, kind) {
		return fmt.Errorf("%s: not offered here (offered: %s)", kind, strings.Join(offered, ", "))
	}
	err = builtins().CheckArgs(kind, raw)
	if err == nil && kind == KindExec && len(o.Exec.Allow) > 0 {
		// The policy's own check: only the allow-list applies at enqueue.
		allow, err := o.Exec.allowList()
		if err != nil {
			return err
		}
		var a ExecArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("%s: bad args: %v", kind, err) // CheckArgs decoded it strictly
		}
		if err := (&execRunner{allow: allow}).check(a); err != nil {
			return fmt.Errorf("%s: bad args: %w", kind, err)
		}
	}
	if err == nil && kind == KindHTTP {
		// The policy's own check: a URL whose host is a refused address.
		al, err := o.HTTP.allowed()
		if err != nil {
			return optionError("Options.HTTP.Allow", err.Error())
		}
		var a HTTPArgs
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("%s: bad args: %v", kind, err) // CheckArgs decoded it strictly
		}
		if err := al.checkPolicy(a); err != nil {
			return fmt.Errorf("%s: bad args: %w", kind, err)
		}
	}
	var fe *hopper.FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s: bad args: %s", kind, jsonerr.ArgsReason(fe, fe.Reason))
	}
	return nil
}

// builtins is a registry of the built-in kinds for ValidateArgs, with the
// default Options for exec and no policy for http: whatever the policy,
// the args' decoding and Validate are the same, and ValidateArgs applies
// o's policy itself. Its handlers never run.
var builtins = sync.OnceValue(func() *hopper.Workers {
	w := hopper.NewWorkers()
	if err := RegisterWith(w, Options{Kinds: []string{KindExec}}); err != nil {
		panic(err)
	}
	hopper.Register(w, KindHTTP, func(context.Context, HTTPArgs) (any, error) {
		return nil, errors.New("kinds: the registry of ValidateArgs runs no job")
	}, nil)
	return w
})
