package browser

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/internal/dashtest"
)

// env is a client with a few kinds, and its dashboard.
type env struct {
	t *testing.T
	c *hopper.Client
	h http.Handler // dashboard.New's, an io.Closer
}

// newEnv makes the dashboard of a client on the in-memory store.
func newEnv(t *testing.T, o dashboard.Options) *env {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Workers: dashtest.Kinds(), Logger: dashtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvOn(t, c, o)
}

// newEnvOn makes the dashboard of c; the test's end closes it and stops c.
func newEnvOn(t *testing.T, c *hopper.Client, o dashboard.Options) *env {
	t.Helper()
	if o.Logger == nil {
		o.Logger = dashtest.Quiet()
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
