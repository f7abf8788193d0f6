package hopper_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/jsonerr"
)

// TestEnqueueManyKeepsTheCause: an item's error in a batch of two or more
// keeps its cause and its parts (it was rebuilt from its text: errors.Is
// no longer saw ErrUnknownKind, and the args' reason named a Go type).
func TestEnqueueManyKeepsTheCause(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	type email struct {
		To string `json:"to"`
	}
	hopper.Register(ws, "email", func(ctx context.Context, a email) (any, error) { return nil, nil }, nil)
	c := silentClient(t, hopper.Config{Workers: ws})
	ctx := context.Background()

	_, err := c.EnqueueMany(ctx, []hopper.EnqueueRequest{{Kind: "email", Args: email{"a"}}, {Kind: "nope"}})
	var fe *hopper.FieldError
	if !errors.Is(err, hopper.ErrUnknownKind) || !errors.As(err, &fe) || !fe.InBatch || fe.Index != 1 || fe.Field != "kind" {
		t.Errorf("unknown kind in item 1: got %#v, want ErrUnknownKind with InBatch, Index 1, Field kind", err)
	}

	_, err = c.EnqueueMany(ctx, []hopper.EnqueueRequest{{Kind: "email", Args: email{"a"}}, {Kind: "email", Args: []byte(`{"to":1}`)}})
	var ae *jsonerr.ArgsError
	if !errors.As(err, &ae) || strings.Contains(jsonerr.ArgsReason(err, ""), "hopper_test") {
		t.Errorf("args that do not fit in item 1: got %#v, want the *jsonerr.ArgsError kept", err)
	}
}
