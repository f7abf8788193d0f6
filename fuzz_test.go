package hopper_test

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

// FuzzArgsDecoding feeds arbitrary bytes as a job's args. A client that
// registered the kind either refuses them (naming the field) or accepts
// them; the same bytes enqueued by a client without workers then run once
// and end completed exactly when the first client accepted them, dead with
// a decode error otherwise — never a panic, never a retry.
func FuzzArgsDecoding(f *testing.F) {
	for _, s := range []string{`{"to":"a@x","n":3,"tags":["a"]}`, `{}`, `null`, `[]`, `"s"`, `{"n":"x"}`, `{"n":1e400}`, `{`, ``, `{"to":"\u0000"}`, `{"extra":1}`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	type email struct {
		To   string   `json:"to"`
		N    int      `json:"n"`
		Tags []string `json:"tags"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st := memstore.New()
		ws := hopper.NewWorkers()
		hopper.Register(ws, "email", func(ctx context.Context, a email) (any, error) { return a, nil }, nil)
		c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		producer, _ := hopper.NewClient(hopper.Config{Store: st, Logger: quiet})
		ctx := context.Background()
		_, checkErr := c.Enqueue(ctx, "email", json.RawMessage(data), nil)
		var fe *hopper.FieldError
		if checkErr != nil && (!errors.As(checkErr, &fe) || fe.Field != "args") {
			t.Fatalf("Enqueue(%q): %v, want nil or a FieldError on args", data, checkErr)
		}
		if checkErr == nil {
			if _, ok, err := c.ProcessNext(ctx, time.Now()); !ok || err != nil {
				t.Fatalf("ProcessNext of the accepted job: %v %v", ok, err)
			}
		}
		res, err := producer.Enqueue(ctx, "email", json.RawMessage(data), nil)
		if err != nil {
			if !errors.As(err, &fe) || fe.Field != "args" || checkErr == nil {
				t.Fatalf("producer Enqueue(%q): %v (worker client: %v)", data, err, checkErr)
			}
			return // not JSON: refused by every client
		}
		j, ok, err := c.ProcessNext(ctx, time.Now())
		if err != nil || !ok || j.ID != res.ID {
			t.Fatalf("ProcessNext: %v %v", ok, err)
		}
		switch {
		case checkErr == nil && j.State == hopper.StateCompleted:
		case checkErr != nil && j.State == hopper.StateDead && j.Attempt == 1 && strings.Contains(j.LastError, "args do not fit"):
		default:
			t.Fatalf("args %q: check said %v, the job ended %s after %d attempts: %q", data, checkErr, j.State, j.Attempt, j.LastError)
		}
	})
}
