package browser

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/httpauth"
)

// readToken is the read token of tokens; the others are never typed in.
const readToken = "read-token-0123456789"

// env is a client with a few kinds, and its dashboard.
type env struct {
	t *testing.T
	c *hopper.Client
	h http.Handler // dashboard.New's, an io.Closer
}

// kinds registers the test kinds: "ok" succeeds, "fail" fails for good,
// "flaky" fails its first attempt for good and succeeds when retried,
// "exec" fails with a result shaped as the exec kind's, "block" runs until
// the client stops.
func kinds() *hopper.Workers {
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
		return map[string]any{"exit_code": 2, "duration": "1.5s", "stdout_tail": "compiling…\nlinking…\n",
			"stderr_tail": "ld: cannot find -lfoo\n"}, hopper.Permanent(errors.New("exit status 2"))
	}, nil)
	hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
		<-ctx.Done() // runs until the client stops
		return nil, ctx.Err()
	}, nil)
	return ws
}

// newEnv makes the dashboard of a client on the in-memory store.
func newEnv(t *testing.T, o dashboard.Options) *env {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Workers: kinds(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvOn(t, c, o)
}

// newEnvOn makes the dashboard of c; the test's end closes it and stops c.
func newEnvOn(t *testing.T, c *hopper.Client, o dashboard.Options) *env {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quiet()
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	h := dashboard.New(c, o)
	t.Cleanup(func() {
		h.(io.Closer).Close()
		c.StopNow()
	})
	return &env{t: t, c: c, h: h}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tokens returns an Auth with a read, a write, an exec and an admin
// token, which logs nothing.
func tokens(t *testing.T) *httpauth.Auth {
	a := &httpauth.Auth{Logger: quiet()}
	if err := a.ParseTokens("read:" + readToken + ",write:write-token-0123456789,admin:admin-token-0123456789,runner=exec:exec-token-0123456789"); err != nil {
		t.Fatal(err)
	}
	return a
}

// enqueue adds a job and returns its ID.
func (e *env) enqueue(kind string, opts *hopper.EnqueueOptions) hopper.ID {
	e.t.Helper()
	res, err := e.c.Enqueue(context.Background(), kind, nil, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.ID
}

// job returns a job as it is now.
func (e *env) job(id hopper.ID) *hopper.Job {
	e.t.Helper()
	j, err := e.c.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// commas writes n as the dashboard shows counts, with thousands
// separators: 1,234,567.
func commas(n int) string {
	s := strconv.Itoa(n)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return sign + s
}
