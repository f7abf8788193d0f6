package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// FuzzArgsDecoding feeds arbitrary bytes as a job's args: Enqueue either
// rejects them as invalid JSON (naming the field) or the job runs once and
// ends completed (args decoded) or dead with a decode error — never a panic,
// never a retry.
func FuzzArgsDecoding(f *testing.F) {
	for _, s := range []string{`{"to":"a@x","n":3,"tags":["a"]}`, `{}`, `null`, `[]`, `"s"`, `{"n":"x"}`, `{"n":1e400}`, `{`, ``, `{"to":"\u0000"}`} {
		f.Add([]byte(s))
	}
	type email struct {
		To   string   `json:"to"`
		N    int      `json:"n"`
		Tags []string `json:"tags"`
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ws := hopper.NewWorkers()
		hopper.Register(ws, "email", func(ctx context.Context, a email) (any, error) { return a, nil }, nil)
		c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		res, err := c.Enqueue(ctx, "email", json.RawMessage(data), nil)
		if err != nil {
			var fe *hopper.FieldError
			if !errors.As(err, &fe) || fe.Field != "args" || json.Valid(data) {
				t.Fatalf("Enqueue(%q): %v", data, err)
			}
			return
		}
		now := time.Now()
		j, ok, err := c.ProcessNext(ctx, now)
		if err != nil || !ok {
			t.Fatalf("ProcessNext: %v %v", ok, err)
		}
		switch j.State {
		case hopper.StateCompleted:
		case hopper.StateDead:
			if j.Attempt != 1 || !strings.Contains(j.LastError, "args: cannot decode") {
				t.Fatalf("dead job: attempt %d error %q", j.Attempt, j.LastError)
			}
		default:
			t.Fatalf("job %d ended %s", res.ID, j.State)
		}
	})
}
