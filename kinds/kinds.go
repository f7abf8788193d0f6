// Package kinds holds Hopper's built-in job kinds, the ones the hopper
// command runs: "exec", which runs a command, and "http", which makes an
// HTTP request. Register them on a hopper.Workers to run them in a program
// of your own, and call Supervise first thing in that program's main, so
// that the commands of exec jobs die with it. See docs/kinds.md.
package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsonerr"
)

// Register registers the built-in kinds, KindExec and KindHTTP, on w,
// with no default options. Their handlers are Exec and HTTP: a job's result
// is an *ExecResult or an *HTTPResult, also kept with a failed attempt when
// the command ran or a response came. Their args are checked at Enqueue and
// AddSchedule: args that do not decode strictly into ExecArgs or HTTPArgs
// (an unknown field, a wrong type) or that their Validate rejects are
// refused with a *hopper.FieldError on "args"; such a job enqueued by a
// process that does not register these kinds fails permanently.
//
// A program that registers KindExec must call Supervise first in main.
func Register(w *hopper.Workers) {
	hopper.Register(w, KindExec, func(ctx context.Context, a ExecArgs) (any, error) {
		return result(Exec(ctx, a))
	}, nil)
	hopper.Register(w, KindHTTP, func(ctx context.Context, a HTTPArgs) (any, error) {
		return result(HTTP(ctx, a))
	}, nil)
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
// client with these kinds registered does (hopper.Workers.CheckArgs: they
// must decode strictly into ExecArgs or HTTPArgs and pass its Validate), so
// that a producer without the workers sees a mistake at enqueue time
// rather than as a dead job. Args that are not valid UTF-8 are refused
// first, naming the field: decoding would silently replace the bad bytes.
// Args of other kinds are not checked.
func ValidateArgs(kind string, raw json.RawMessage) error {
	if kind != KindExec && kind != KindHTTP {
		return nil
	}
	if !utf8.Valid(raw) {
		if field := invalidUTF8Path(raw); field != "" {
			return fmt.Errorf("%s: bad args: %s is not valid UTF-8: job args are JSON text, which cannot carry these bytes exactly", kind, field)
		}
		return fmt.Errorf("%s: bad args: not valid UTF-8", kind)
	}
	var fe *hopper.FieldError
	if err := builtins().CheckArgs(kind, raw); errors.As(err, &fe) {
		return fmt.Errorf("%s: bad args: %s", kind, jsonerr.ArgsReason(fe, fe.Reason))
	}
	return nil
}

// builtins is a registry of the built-in kinds, for ValidateArgs.
var builtins = sync.OnceValue(func() *hopper.Workers {
	w := hopper.NewWorkers()
	Register(w)
	return w
})
