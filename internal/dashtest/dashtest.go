// Package dashtest holds the fixtures the dashboard's tests share with its
// browser tests in the nested module internal/heavytest (a _test.go file
// cannot be imported): the test kinds, the test tokens, a memory store
// whose bulk action can be held mid-way, and a bounded wait. It is for
// tests only; nothing in the library imports it.
package dashtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// The secrets of the tokens Tokens returns.
const (
	ReadToken  = "read-token-0123456789"
	WriteToken = "write-token-0123456789"
	AdminToken = "admin-token-0123456789"
	ExecToken  = "exec-token-0123456789"
)

// Kinds registers the test kinds: "ok" succeeds, "fail" fails for good,
// "flaky" fails its first attempt for good and succeeds when retried,
// "exec" fails with a result shaped as the exec kind's and keeps output
// with its attempt (stdout and stderr, a log line), "block" runs until
// the client stops.
func Kinds() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return map[string]any{"sent": true}, nil
	}, nil)
	hopper.RegisterRaw(ws, "fail", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("smtp: 550 mailbox unavailable"))
	}, nil)
	hopper.RegisterRaw(ws, "flaky", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if j := hopper.JobFromContext(ctx); j != nil && len(j.Attempts) == 0 {
			return nil, hopper.Permanent(errors.New("upstream timed out"))
		}
		return "ok the second time", nil
	}, nil)
	hopper.RegisterRaw(ws, "exec", func(ctx context.Context, _ json.RawMessage) (any, error) {
		// The output it keeps with the attempt: untrusted text, HTML included.
		io.WriteString(hopper.Stdout(ctx), "compiling <script>alert(1)</script>…\nlinking…\n")
		io.WriteString(hopper.Stderr(ctx), "ld: cannot find -lfoo\n")
		hopper.Logger(ctx).Info("linking", "target", "<img src=x onerror=alert(2)>")
		return map[string]any{"exit_code": 2, "duration": "1.5s", "stdout_tail": "compiling…\nlinking…\n",
			"stderr_tail": "ld: cannot find -lfoo\n"}, hopper.Permanent(errors.New("exit status 2"))
	}, nil)
	hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done() // runs until the client stops
		return nil, ctx.Err()
	}, nil)
	return ws
}

// Quiet is a logger that writes nothing.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Tokens returns an Auth with a read, a write, an exec (named runner) and
// an admin token, which logs nothing.
func Tokens(t testing.TB) *httpauth.Auth {
	t.Helper()
	a := &httpauth.Auth{Logger: Quiet()}
	if err := a.ParseTokens("read:" + ReadToken + ",write:" + WriteToken + ",admin:" + AdminToken + ",runner=exec:" + ExecToken); err != nil {
		t.Fatal(err)
	}
	return a
}

// BulkJobs is the number of jobs the bulk tests act on: three batches.
const BulkJobs = 2*hopper.BulkBatch + 500

// GatedStore is a memory store whose CancelMatching call number at (from
// 1) waits, once, until Release is closed or its context ends, as a
// durable store's batch may take a while; Entered is closed when it
// starts waiting. A call whose context has ended fails, as a durable
// store's does.
type GatedStore struct {
	store.Store
	Entered chan struct{}
	Release chan struct{}
	at      int32
	calls   atomic.Int32
}

// NewGatedStore returns a GatedStore that holds its at-th CancelMatching.
func NewGatedStore(at int) *GatedStore {
	return &GatedStore{Store: memstore.New(), at: int32(at), Entered: make(chan struct{}), Release: make(chan struct{})}
}

// CancelMatching implements store.Store, holding the at-th call.
func (g *GatedStore) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	if g.calls.Add(1) == g.at {
		close(g.Entered)
		select {
		case <-g.Release:
		case <-ctx.Done():
		}
	}
	if err := context.Cause(ctx); err != nil {
		return store.MatchResult{}, err
	}
	return g.Store.CancelMatching(ctx, p)
}

// Within waits for ch, failing the test after a generous bound (a minute:
// it only bounds a failing test).
func Within[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
		panic("unreachable")
	}
}
