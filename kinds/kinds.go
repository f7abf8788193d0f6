// Package kinds holds Hopper's built-in job kinds, the ones the hopper
// command runs: "exec", which runs a command, and "http", which makes an
// HTTP request. Register them on a hopper.Workers to run them in a program
// of your own, and call Supervise first thing in that program's main, so
// that the commands of exec jobs die with it. See docs/kinds.md.
package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/hopperq/hopper"
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

// ValidateArgs checks the args of a job of a built-in kind, as its handler
// will decode them (unknown fields are errors), so that a mistake shows at
// enqueue time rather than as a dead job. Args that are not valid UTF-8
// are refused, naming the field: decoding would silently replace the bad
// bytes. Args of other kinds are not checked.
func ValidateArgs(kind string, raw json.RawMessage) error {
	switch kind {
	case KindExec:
		var a ExecArgs
		if err := decodeStrict(kind, raw, &a); err != nil {
			return err
		}
		return a.Validate()
	case KindHTTP:
		var a HTTPArgs
		if err := decodeStrict(kind, raw, &a); err != nil {
			return err
		}
		return a.Validate()
	}
	return nil
}

func decodeStrict(kind string, raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return fmt.Errorf("%s: args missing", kind)
	}
	if !utf8.Valid(raw) {
		field := invalidUTF8Path(raw)
		if field == "" {
			return fmt.Errorf("%s: bad args: not valid UTF-8", kind)
		}
		return fmt.Errorf("%s: bad args: %s is not valid UTF-8: job args are JSON text, which cannot carry these bytes exactly", kind, field)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: bad args: %v", kind, err)
	}
	return nil
}
