package httpapi

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/store/memstore"
)

// pingEnv is a client with the check "backup" (every hour, grace 10m)
// behind the ping handler with o.
type pingEnv struct {
	t   *testing.T
	c   *hopper.Client
	srv *httptest.Server
	id  string
}

func newPingEnv(t *testing.T, store string, o PingOptions) *pingEnv {
	t.Helper()
	e := newEnv(t, envOpts{store: store})
	ch, err := e.c.AddCheck(t.Context(), "backup", hopper.CheckOptions{Period: time.Hour, Grace: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(PingPrefix+"/", NewPing(e.c, o))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &pingEnv{t: t, c: e.c, srv: srv, id: ch.PingID}
}

// ping sends method to path with body and returns the status and body.
func (p *pingEnv) ping(method, path, body string) (int, string) {
	p.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, p.srv.URL+path, r)
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("User-Agent", "curl/8.5.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (p *pingEnv) check() *hopper.Check {
	p.t.Helper()
	c, err := p.c.GetCheck(context.Background(), "backup")
	if err != nil {
		p.t.Fatal(err)
	}
	return c
}

func (p *pingEnv) pings() []*hopper.Ping {
	p.t.Helper()
	ps, err := p.c.Pings(context.Background(), "backup", 0)
	if err != nil {
		p.t.Fatal(err)
	}
	return ps
}

// TestPingRoutes: every ping route of Healthchecks' protocol, with GET,
// HEAD and POST, on every store: what each records and how the check's
// status follows.
func TestPingRoutes(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			p := newPingEnv(t, st, PingOptions{})
			id := p.id
			for _, tc := range []struct {
				method, path, body string
				kind               job.PingKind
				exit               int // -1: none
				status             string
			}{
				{"GET", "/ping/" + id, "", job.PingSuccess, -1, job.CheckUp},
				{"POST", "/ping/" + id + "/start", "starting", job.PingStart, -1, job.CheckStarted},
				{"HEAD", "/ping/" + id + "/fail", "", job.PingFail, -1, job.CheckDown},
				{"POST", "/ping/" + id + "/0", "all good", job.PingSuccess, 0, job.CheckUp},
				{"GET", "/ping/" + id + "/1", "", job.PingFail, 1, job.CheckDown},
				{"POST", "/ping/" + id + "/log", "a message", job.PingLog, -1, job.CheckDown},
				{"GET", "/ping/" + id + "/255", "", job.PingFail, 255, job.CheckDown},
				{"POST", "/ping/" + id, "ok", job.PingSuccess, -1, job.CheckUp},
			} {
				status, body := p.ping(tc.method, tc.path, tc.body)
				if status != http.StatusOK || tc.method != "HEAD" && body != "OK" {
					t.Fatalf("%s %s: %d %q, want 200 OK", tc.method, tc.path, status, body)
				}
				got := p.pings()[0]
				if got.Kind != tc.kind || got.Method != tc.method || got.Body != tc.body || got.UserAgent != "curl/8.5.0" || got.RemoteAddr == "" ||
					(tc.exit < 0) != (got.ExitCode == nil) || got.ExitCode != nil && *got.ExitCode != tc.exit {
					t.Errorf("%s %s: recorded %+v, want kind %s exit %d body %q", tc.method, tc.path, got, tc.kind, tc.exit, tc.body)
				}
				if s := p.check().Status(p.c.Now()); s != tc.status {
					t.Errorf("%s %s: status %s, want %s", tc.method, tc.path, s, tc.status)
				}
			}
			for _, tc := range []struct {
				method, path string
				status       int
			}{
				{"GET", "/ping/" + id + "/256", http.StatusBadRequest},
				{"GET", "/ping/" + id + "/-1", http.StatusNotFound},
				{"GET", "/ping/" + id + "/other", http.StatusNotFound},
				{"GET", "/ping/" + id + "/start/more", http.StatusNotFound},
				{"PUT", "/ping/" + id, http.StatusMethodNotAllowed},
				{"DELETE", "/ping/" + id, http.StatusMethodNotAllowed},
				{"GET", "/ping/" + id + "?rid=" + strings.Repeat("r", 129), http.StatusBadRequest},
			} {
				if status, body := p.ping(tc.method, tc.path, ""); status != tc.status {
					t.Errorf("%s %s: %d %q, want %d", tc.method, tc.path, status, body, tc.status)
				}
			}
			if n := p.check().Pings; n != 8 {
				t.Errorf("%d pings recorded, want 8: the refused requests changed the check", n)
			}
		})
	}
}

// TestPingUnknownID (docs/security.md): a ping to an unknown ID, or to a
// malformed one, is a 404 and changes nothing.
func TestPingUnknownID(t *testing.T) {
	t.Parallel()
	p := newPingEnv(t, "memory", PingOptions{})
	before := p.check()
	for _, path := range []string{"/ping/" + job.NewPingID(), "/ping/" + job.NewPingID() + "/fail", "/ping/x", "/ping/", "/ping/" + strings.ToLower(p.id) + "x"} {
		if status, body := p.ping("POST", path, "hello"); status != http.StatusNotFound || body != "not found" {
			t.Errorf("POST %s: %d %q, want 404 not found", path, status, body)
		}
	}
	if after := p.check(); after.Pings != before.Pings || len(p.pings()) != 0 {
		t.Errorf("unknown IDs changed the check: %d pings", after.Pings)
	}
}

// TestPingRunIDs: ?rid= pairs each run's start and finish, so that
// concurrent runs are timed apart, and a run still open keeps the check
// "started".
func TestPingRunIDs(t *testing.T) {
	t.Parallel()
	p := newPingEnv(t, "memory", PingOptions{})
	p.ping("GET", "/ping/"+p.id+"/start?rid=one", "")
	p.ping("GET", "/ping/"+p.id+"/start?rid=two", "")
	p.ping("GET", "/ping/"+p.id+"?rid=one", "")
	c := p.check()
	if len(c.Runs) != 1 || c.Runs[0].RID != "two" || c.Status(p.c.Now()) != job.CheckStarted {
		t.Errorf("after one's finish: runs %+v status %s, want two open, started", c.Runs, c.Status(p.c.Now()))
	}
	ps := p.pings()
	if ps[0].RID != "one" || ps[0].Duration <= 0 {
		t.Errorf("one's finish: %+v, want its duration", ps[0])
	}
	p.ping("GET", "/ping/"+p.id+"/fail?rid=two", "")
	if c := p.check(); len(c.Runs) != 0 || !c.Failed {
		t.Errorf("after two's failure: %+v", c)
	}
	// Newest first: two's failure, one's success, two's start, one's start.
	ps = p.pings()
	if ps[0].RID != "two" || ps[0].Duration != ps[0].At.Sub(ps[2].At) || ps[1].Duration != ps[1].At.Sub(ps[3].At) {
		t.Errorf("durations: two %v (started %v, failed %v), one %v (started %v, done %v)",
			ps[0].Duration, ps[2].At, ps[0].At, ps[1].Duration, ps[3].At, ps[1].At)
	}
}

// TestPingBodyCap (docs/security.md): a ping's body is kept up to
// job.MaxPingBody bytes, marked truncated beyond, up to a body of
// MaxPingRequestBytes.
func TestPingBodyCap(t *testing.T) {
	t.Parallel()
	p := newPingEnv(t, "memory", PingOptions{})
	p.ping("POST", "/ping/"+p.id, strings.Repeat("a", job.MaxPingBody))
	if got := p.pings()[0]; len(got.Body) != job.MaxPingBody || got.Truncated {
		t.Errorf("a body of the cap: %d bytes, truncated %v", len(got.Body), got.Truncated)
	}
	for _, n := range []int{job.MaxPingBody + 1, MaxPingRequestBytes} {
		status, _ := p.ping("POST", "/ping/"+p.id+"/log", strings.Repeat("b", n))
		if status != http.StatusOK {
			t.Fatalf("a body of %d bytes: %d", n, status)
		}
		if got := p.pings()[0]; len(got.Body) != job.MaxPingBody || !got.Truncated {
			t.Errorf("a body of %d bytes: kept %d, truncated %v; want %d, true", n, len(got.Body), got.Truncated, job.MaxPingBody)
		}
	}
}

// TestPingRateLimit (docs/security.md): each ping ID has a token bucket,
// and all pings share one; beyond them a ping is a 429 with Retry-After
// and changes nothing; the buckets refill with time.
func TestPingRateLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	p := newPingEnv(t, "memory", PingOptions{Rate: 1, Burst: 3, GlobalRate: 2, GlobalBurst: 5, Now: clock})
	other, err := p.c.AddCheck(t.Context(), "other", hopper.CheckOptions{Period: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if status, _ := p.ping("GET", "/ping/"+p.id, ""); status != http.StatusOK {
			t.Fatalf("ping %d: %d", i, status)
		}
	}
	req, _ := http.NewRequest("GET", p.srv.URL+"/ping/"+p.id, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "1" {
		t.Errorf("4th ping at once: %d Retry-After %q, want 429 and 1", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if n := p.check().Pings; n != 3 {
		t.Errorf("%d pings recorded, want 3", n)
	}
	// The other ID has its own bucket, but the global one (5) runs out.
	for i, want := range []int{200, 200, 429} {
		if status, _ := p.ping("GET", "/ping/"+other.PingID, ""); status != want {
			t.Errorf("other's ping %d: %d, want %d", i, status, want)
		}
	}
	// Unknown IDs take from the global bucket too.
	if status, _ := p.ping("GET", "/ping/"+job.NewPingID(), ""); status != http.StatusTooManyRequests {
		t.Errorf("unknown ID with the global bucket empty: %d, want 429", status)
	}
	advance(time.Second)
	if status, _ := p.ping("GET", "/ping/"+p.id, ""); status != http.StatusOK {
		t.Errorf("a second later: %d, want 200", status)
	}
}

// TestCheckRoutes: the admin routes under /api/v1/checks; the ping ID is
// shown to admin tokens only (docs/security.md).
func TestCheckRoutes(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st, auth: allTokens(t)})
			e.token = adminToken
			var v job.CheckView
			e.do("POST", "/api/v1/checks", `{"name":"backup","cron":"0 3 * * *","time_zone":"Europe/Berlin","grace":"30m","channels":["ops"]}`).ok(http.StatusCreated, &v)
			if v.Name != "backup" || v.Status != job.CheckNew || len(v.PingID) != 22 || v.PingPath != "/ping/"+v.PingID || v.Grace.D() != 30*time.Minute {
				t.Fatalf("created: %+v", v)
			}
			id := v.PingID
			e.do("POST", "/api/v1/checks", `{"name":"backup","period":"1h"}`).fails(http.StatusConflict, "duplicate", "")
			e.do("POST", "/api/v1/checks", `{"name":"x","period":"1h","cron":"@daily"}`).fails(http.StatusBadRequest, "invalid", "period")
			e.do("POST", "/api/v1/checks", `{"name":"x","period":"1h","bogus":1}`).fails(http.StatusBadRequest, "invalid", "bogus")
			if _, _, err := e.c.PingCheck(t.Context(), id, hopper.Ping{Kind: job.PingSuccess, Body: "done"}); err != nil {
				t.Fatal(err)
			}
			var list []job.CheckView
			e.do("GET", "/api/v1/checks", "").ok(http.StatusOK, &list)
			if len(list) != 1 || list[0].PingID != id || list[0].Status != job.CheckUp {
				t.Errorf("admin list: %+v", list)
			}
			for _, tok := range []string{readToken, writeToken} {
				r := e.doAs(tok, "GET", "/api/v1/checks", "")
				r.ok(http.StatusOK, &list)
				if strings.Contains(string(r.body), id) || list[0].PingID != job.RedactedSecret {
					t.Errorf("a %s token saw the ping ID: %s", tok, r.body)
				}
				r = e.doAs(tok, "GET", "/api/v1/checks/backup", "")
				if r.status != http.StatusOK || strings.Contains(string(r.body), id) {
					t.Errorf("GET check with a %s token: %d %s", tok, r.status, r.body)
				}
			}
			var detail struct {
				job.CheckView
				RecentPings []*hopper.Ping `json:"recent_pings"`
			}
			e.do("GET", "/api/v1/checks/backup?pings=5", "").ok(http.StatusOK, &detail)
			if detail.PingID != id || len(detail.RecentPings) != 1 || detail.RecentPings[0].Body != "done" {
				t.Errorf("detail: %+v", detail)
			}
			e.do("GET", "/api/v1/checks/nope", "").fails(http.StatusNotFound, "not_found", "name")
			e.do("GET", "/api/v1/checks/backup?pings=0", "").fails(http.StatusBadRequest, "invalid", "pings")
			e.doAs(readToken, "POST", "/api/v1/checks/backup/pause", "").fails(http.StatusForbidden, "forbidden", "")
			e.doAs(writeToken, "POST", "/api/v1/checks/backup/pause", "").ok(http.StatusOK, &v)
			if v.Status != job.CheckPaused || v.PingID != job.RedactedSecret {
				t.Errorf("paused by a write token: %+v", v)
			}
			e.doAs(writeToken, "POST", "/api/v1/checks/backup/resume", "").ok(http.StatusOK, &v)
			if v.Status != job.CheckNew {
				t.Errorf("resumed: %+v, want new", v)
			}
			e.doAs(writeToken, "POST", "/api/v1/checks", `{"name":"y","period":"1h"}`).fails(http.StatusForbidden, "forbidden", "")
			e.doAs(writeToken, "DELETE", "/api/v1/checks/backup", "").fails(http.StatusForbidden, "forbidden", "")
			e.do("DELETE", "/api/v1/checks/backup", "").ok(http.StatusOK, nil)
			e.do("DELETE", "/api/v1/checks/backup", "").fails(http.StatusNotFound, "not_found", "name")
		})
	}
}

// TestCheckMissedPingWebhookLatency: a check pinged over HTTP on loopback
// that then misses its ping raises a check_down notification, delivered
// to a signed webhook, within the grace plus 10 s of the ping it missed
// (real clock).
func TestCheckMissedPingWebhookLatency(t *testing.T) {
	t.Parallel()
	const secret = "hook-key"
	recv := make(chan hopper.Notification, 4)
	got := make(chan time.Time, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, _ := strconv.ParseInt(r.Header.Get(kinds.TimestampHeader), 10, 64)
		if !hmac.Equal([]byte(r.Header.Get(kinds.SignatureHeader)), []byte(kinds.Sign(secret, ts, body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var n hopper.Notification
		if err := json.Unmarshal(body, &n); err != nil {
			t.Errorf("notification %s: %v", body, err)
		}
		got <- time.Now()
		recv <- n
	}))
	defer hook.Close()
	ws := hopper.NewWorkers()
	ref := &clientRef{}
	if err := kinds.RegisterNotify(ws, kinds.Options{Kinds: []string{kinds.KindHTTP}, HTTP: kinds.HTTPPolicy{Allow: []string{"127.0.0.0/8", "::1"}}}, ref); err != nil {
		t.Fatal(err)
	}
	c, err := hopper.NewClient(hopper.Config{Store: memstore.New(), Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ref.c = c
	ctx := t.Context()
	if err := c.SetChannel(ctx, hopper.Channel{Name: "hook", Type: job.ChannelWebhook, URL: hook.URL, Secret: secret}); err != nil {
		t.Fatal(err)
	}
	const period, grace = time.Second, time.Second
	ch, err := c.AddCheck(ctx, "cron-line", hopper.CheckOptions{Period: period, Grace: grace, Channels: []string{"hook"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	srv := httptest.NewServer(NewPing(c, PingOptions{}))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/ping/" + ch.PingID) // what `… && curl -fsS URL` does
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("ping: %v %v", res, err)
	}
	res.Body.Close()
	missed := time.Now().Add(period)
	select {
	case at := <-got:
		n := <-recv
		if n.Event != job.NotifyCheckDown || n.Status != job.StatusDown || n.Check != "cron-line" {
			t.Errorf("notification %+v, want check_down down of cron-line", n)
		}
		late := at.Sub(missed)
		t.Logf("check_down delivered %v after the missed ping (grace %v)", late, grace)
		if late > grace+10*time.Second {
			t.Errorf("delivered %v after the missed ping, want within grace + 10s", late)
		}
	case <-time.After(time.Minute):
		t.Fatal("no notification within a minute")
	}
}

// clientRef is a kinds.ChannelSource whose client is set after it is made.
type clientRef struct{ c *hopper.Client }

func (r *clientRef) Channel(ctx context.Context, name string) (*hopper.Channel, error) {
	return r.c.Channel(ctx, name)
}

// checkRecipe returns a status recipe (statuses_test.go): method on the
// check "c" (plus verb) of an environment newE makes.
func checkRecipe(newE func(*testing.T, envOpts) *env, method, verb string) func(*testing.T) int {
	return func(t *testing.T) int {
		e := newE(t, envOpts{})
		e.do("POST", "/api/v1/checks", `{"name":"c","period":"1h"}`)
		return e.do(method, "/api/v1/checks/c"+verb, "").status
	}
}
