// Package kinds holds Hopper's built-in job kinds, the ones the hopper
// command runs: "exec", which runs a command, and "http", which makes an
// HTTP request. Register them on a hopper.Workers to run them in a program
// of your own.
package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/hopperq/hopper"
)

// Register registers the built-in kinds, KindExec and KindHTTP, on w.
func Register(w *hopper.Workers) {
	hopper.RegisterRaw(w, KindExec, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a ExecArgs
		if err := decodeStrict(KindExec, raw, &a); err != nil {
			return nil, hopper.Permanent(err)
		}
		return Exec(ctx, a)
	}, nil)
	hopper.RegisterRaw(w, KindHTTP, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var a HTTPArgs
		if err := decodeStrict(KindHTTP, raw, &a); err != nil {
			return nil, hopper.Permanent(err)
		}
		return HTTP(ctx, a)
	}, nil)
}

// ValidateArgs checks the args of a job of a built-in kind, as its handler
// will decode them (unknown fields are errors), so that a mistake shows at
// enqueue time rather than as a dead job. Args of other kinds are not
// checked.
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
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s: bad args: %v", kind, err)
	}
	return nil
}
