package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestArgsRefuseLoneSurrogates checks that a \u escape of a lone UTF-16
// surrogate in JSON args, valid UTF-8 that encoding/json decodes to U+FFFD,
// is refused with the field named, by ValidateArgs and by Enqueue on a
// client with the kinds registered, storing nothing; and that a job holding
// one, enqueued by a client without the kinds, dies without running.
// A surrogate pair, and an escaped backslash before "ud800", are text and
// pass.
func TestArgsRefuseLoneSurrogates(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	Register(ws)
	st := memstore.New()
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ kind, raw, field, escape string }{
		{KindExec, `{"command":"echo","args":["\ud800"]}`, "args[0]", `\ud800`},
		{KindExec, `{"command":"echo","args":["ok","a\uDFFFb"]}`, "args[1]", `\uDFFF`},
		{KindExec, `{"command":"echo","env":["A=\ud83d"]}`, "env[0]", `\ud83d`},
		{KindExec, `{"command":"echo\udbff\u0041"}`, "command", `\udbff`},
		{KindExec, `{"command":"echo","dir":"/\ude00\ud83d"}`, "dir", `\ude00`},
		{KindHTTP, `{"url":"http://x/","headers":{"X-T":"\udc00"}}`, "headers.X-T", `\udc00`},
		{KindHTTP, `{"url":"http://x/","headers":{"X\ud800":"v"}}`, "headers.X\uFFFD (a key)", `\ud800`},
		{KindHTTP, `{"url":"http://x/","body":"\ud800\ud800"}`, "body", `\ud800`},
	} {
		err := ValidateArgs(tc.kind, json.RawMessage(tc.raw))
		if err == nil || !strings.Contains(err.Error(), ": "+tc.field+" holds "+tc.escape+", ") {
			t.Errorf("ValidateArgs(%s): %v, want an error naming %s and %s", tc.raw, err, tc.field, tc.escape)
		}
		var fe *hopper.FieldError
		if _, err := c.Enqueue(ctx, tc.kind, json.RawMessage(tc.raw), nil); !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(fe.Reason, tc.field+" holds "+tc.escape) {
			t.Errorf("Enqueue(%s): %v, want a FieldError on args naming %s", tc.raw, err, tc.field)
		}
	}
	if n, _ := c.Count(ctx, hopper.ListOptions{}); n != 0 {
		t.Fatalf("%d jobs stored after refused enqueues", n)
	}
	for _, raw := range []string{
		`{"command":"echo","args":["\ud83d\ude00","\\ud800","\u00e9"]}`,
	} {
		if err := ValidateArgs(KindExec, json.RawMessage(raw)); err != nil {
			t.Errorf("ValidateArgs(%s): %v", raw, err)
		}
		if _, err := c.Enqueue(ctx, KindExec, json.RawMessage(raw), nil); err != nil {
			t.Errorf("Enqueue(%s): %v", raw, err)
		}
	}

	producer, err := hopper.NewClient(hopper.Config{Store: st}) // without the kinds
	if err != nil {
		t.Fatal(err)
	}
	res, err := producer.Enqueue(ctx, KindExec, json.RawMessage(`{"command":"echo","args":["\ud800"]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunReady(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	j, err := c.Get(ctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != hopper.StateDead || j.Result != nil || !strings.Contains(j.LastError, `args[0] holds \ud800`) {
		t.Errorf("a job holding a lone surrogate ran: %s, result %s, error %q; want dead without running, saying why", j.State, j.Result, j.LastError)
	}
}
