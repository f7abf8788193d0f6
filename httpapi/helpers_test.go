package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/pgtest"
	_ "github.com/hopperq/hopper/store/pgstore"     // postgres://
	_ "github.com/hopperq/hopper/store/sqlitestore" // sqlite:
	"go.uber.org/goleak"
)

// TestMain also checks, when the tests pass, that every status they saw
// an operation answer is declared in the OpenAPI document (observe).
func TestMain(m *testing.M) { goleak.VerifyTestMain(afterTests{m}) }

// Tokens of the test servers that have auth.
const (
	readToken  = "read-read-read-read"
	writeToken = "write-write-write-write"
	execToken  = "exec-exec-exec-exec-exec"
	adminToken = "admin-admin-admin-admin"
)

// env is a client behind the API on a real listener.
type env struct {
	t   *testing.T
	c   *hopper.Client
	srv *httptest.Server
	// token is sent with every request unless a request says otherwise.
	token string
	// release lets a blocking job ("block" kind) finish; started says it
	// began.
	release chan struct{}
	started chan struct{}
}

// stores are the stores the API's tests run on: the in-memory store, a
// SQLite file and a PostgreSQL schema (skipped without a server).
var stores = []string{"memory", "sqlite", "postgres"}

type envOpts struct {
	store string // one of stores; "" is memory
	auth  *httpauth.Auth
	cfg   func(*hopper.Config)
	api   Options
}

// newEnv starts an API server on a fresh client with the kinds ok (does
// nothing), fail (fails permanently), typed (args {"n": int}) and block
// (waits for env.release).
func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	e := &env{t: t, release: make(chan struct{}), started: make(chan struct{}, 16)}
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, args json.RawMessage) (any, error) { return "done", nil }, nil)
	hopper.RegisterRaw(ws, "fail", func(ctx context.Context, args json.RawMessage) (any, error) {
		// Its output, kept with the attempt: untrusted text.
		hopper.Logger(ctx).Warn("about to fail", "why", "<b>on purpose</b>")
		io.WriteString(hopper.Stdout(ctx), "<script>alert(1)</script>\n")
		return nil, hopper.Permanent(errors.New("failing on purpose"))
	}, nil)
	hopper.Register(ws, "typed", func(ctx context.Context, a struct {
		N int `json:"n"`
	}) (any, error) {
		return a.N, nil
	}, nil)
	hopper.RegisterRaw(ws, "block", func(ctx context.Context, args json.RawMessage) (any, error) {
		e.started <- struct{}{}
		select {
		case <-e.release:
			return nil, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}, nil)
	cfg := hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler), ExternalKinds: []string{"remote"}}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	var err error
	switch o.store {
	case "", "memory":
		e.c, err = hopper.NewClient(cfg)
	case "sqlite":
		e.c, err = hopper.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "api.db"), cfg)
	case "postgres":
		e.c, err = hopper.Open(context.Background(), pgtest.StoreURL(t, 4), cfg)
	default:
		t.Fatalf("unknown store %q", o.store)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.c.StopNow() })
	api := o.api
	api.Auth = o.auth
	if api.Logger == nil {
		api.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(Prefix+"/", observe(New(e.c, api)))
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// response is one response of the API.
type response struct {
	status int
	header http.Header
	body   []byte
	t      *testing.T
	req    string
}

// do sends a request with e's token.
func (e *env) do(method, path, body string) response {
	e.t.Helper()
	return e.doAs(e.token, method, path, body)
}

// doAs sends a request with token (none if "").
func (e *env) doAs(token, method, path, body string) response {
	e.t.Helper()
	return e.doWith(token, nil, method, path, body)
}

// doWith sends a request with token (none if "") and headers h.
func (e *env) doWith(token string, h http.Header, method, path, body string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: res.StatusCode, header: res.Header, body: b, t: e.t, req: method + " " + path}
}

// ok fails unless r has status want, and decodes its body into v (if not
// nil).
func (r response) ok(want int, v any) response {
	r.t.Helper()
	if r.status != want {
		r.t.Fatalf("%s: status %d, want %d: %s", r.req, r.status, want, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		r.t.Errorf("%s: Content-Type %q", r.req, ct)
	}
	if v != nil {
		reflect.ValueOf(v).Elem().SetZero() // Decode would keep fields the body leaves out
		dec := json.NewDecoder(bytes.NewReader(r.body))
		if err := dec.Decode(v); err != nil {
			r.t.Fatalf("%s: body is not the JSON wanted: %v\n%s", r.req, err, r.body)
		}
	}
	return r
}

// apiErr is the JSON error body.
type apiErr struct {
	Error struct {
		Code    string `json:"code"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"error"`
}

// fails fails unless r is an error with status, code and field, and its
// message holds every want.
func (r response) fails(status int, code, field string, want ...string) {
	r.t.Helper()
	if r.status != status {
		r.t.Errorf("%s: status %d, want %d: %s", r.req, r.status, status, r.body)
		return
	}
	var e apiErr
	if err := json.Unmarshal(r.body, &e); err != nil {
		r.t.Errorf("%s: error body is not JSON: %v: %s", r.req, err, r.body)
		return
	}
	if e.Error.Code != code || e.Error.Field != field {
		r.t.Errorf("%s: error code %q field %q, want %q %q: %s", r.req, e.Error.Code, e.Error.Field, code, field, e.Error.Message)
	}
	if e.Error.Message == "" {
		r.t.Errorf("%s: empty message", r.req)
	}
	for _, w := range want {
		if !strings.Contains(e.Error.Message, w) {
			r.t.Errorf("%s: message %q lacks %q", r.req, e.Error.Message, w)
		}
	}
}

// enqueue enqueues a job through the API and returns its ID.
func (e *env) enqueue(body string) hopper.ID {
	e.t.Helper()
	var res enqueued
	e.do("POST", "/api/v1/jobs", body).ok(http.StatusCreated, &res)
	return res.ID
}

// job gets a job through the client.
func (e *env) job(id hopper.ID) *hopper.Job {
	e.t.Helper()
	j, err := e.c.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// run runs the next due job in this goroutine.
func (e *env) run() *hopper.Job {
	e.t.Helper()
	j, ok, err := e.c.ProcessNext(context.Background(), time.Now())
	if err != nil || !ok {
		e.t.Fatalf("ProcessNext: %v, %v", ok, err)
	}
	return j
}

// finished makes one completed, one dead and one cancelled job, and
// returns their IDs.
func (e *env) finished() (completed, dead, cancelled hopper.ID) {
	e.t.Helper()
	completed = e.enqueue(`{"kind":"ok"}`)
	if j := e.run(); j.State != hopper.StateCompleted {
		e.t.Fatalf("job %d: %s", j.ID, j.State)
	}
	dead = e.enqueue(`{"kind":"fail"}`)
	if j := e.run(); j.State != hopper.StateDead {
		e.t.Fatalf("job %d: %s", j.ID, j.State)
	}
	cancelled = e.enqueue(`{"kind":"ok","delay":"1h"}`)
	if ok, err := e.c.Cancel(context.Background(), cancelled); !ok || err != nil {
		e.t.Fatalf("cancel: %v %v", ok, err)
	}
	return completed, dead, cancelled
}

// running starts a job of kind block in another goroutine and returns its
// ID once its handler runs; release it with close(e.release), then wait
// on the returned channel.
func (e *env) running() (hopper.ID, <-chan *hopper.Job) {
	e.t.Helper()
	id := e.enqueue(`{"kind":"block"}`)
	done := make(chan *hopper.Job, 1)
	go func() {
		j, _, _ := e.c.ProcessNext(context.Background(), time.Now())
		done <- j
	}()
	<-e.started
	return id, done
}

// recorder serves one request without a body on h, in this goroutine.
func recorder(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}
