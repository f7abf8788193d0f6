package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/job"
)

// allTokens is an Auth with a read, a write, an exec and an admin token.
func allTokens(t *testing.T) *httpauth.Auth {
	t.Helper()
	a := &httpauth.Auth{Logger: slog.New(slog.DiscardHandler)}
	if err := a.ParseTokens("read:" + readToken + ",write:" + writeToken + ",exec:" + execToken + ",admin:" + adminToken); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestChannelSecretsNeverShown (docs/security.md): a channel's secrets —
// a webhook's HMAC key, an SMTP password, a Slack URL's token path, a
// webhook URL's user information and query — are never in an API
// response, on every store; a channel read, edited and posted back keeps
// them.
func TestChannelSecretsNeverShown(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st, auth: allTokens(t)})
			e.token = adminToken
			secrets := []string{"hmac-key-1", "smtp-pass-2", "T000/B000/slacktoken3", "user4:pw4", "token5"}
			for _, c := range []struct{ name, body string }{
				{"hook", `{"type":"webhook","url":"https://user4:pw4@example.com/h?k=token5","secret":"hmac-key-1","all":true}`},
				{"mail", `{"type":"email","smtp_addr":"smtp.example.com:587","from":"a@example.com","to":["b@example.com"],"username":"u","password":"smtp-pass-2"}`},
				{"slack", `{"type":"slack","url":"https://hooks.slack.com/services/T000/B000/slacktoken3"}`},
			} {
				r := e.do("POST", "/api/v1/channels/"+c.name, c.body)
				if r.status != http.StatusOK {
					t.Fatalf("POST channel %s: %d %s", c.name, r.status, r.body)
				}
				for _, s := range secrets {
					if strings.Contains(string(r.body), s) {
						t.Errorf("POST channel %s echoed a secret: %s", c.name, r.body)
					}
				}
			}
			r := e.do("GET", "/api/v1/channels", "")
			if r.status != http.StatusOK {
				t.Fatalf("GET channels: %d %s", r.status, r.body)
			}
			for _, s := range secrets {
				if strings.Contains(string(r.body), s) {
					t.Errorf("GET channels shows a secret %q: %s", s, r.body)
				}
			}
			var shown []hopper.Channel
			if err := json.Unmarshal(r.body, &shown); err != nil || len(shown) != 3 {
				t.Fatalf("channels %s: %v", r.body, err)
			}
			// Posted back as shown (an edit of another field), each keeps its secrets.
			for _, ch := range shown {
				ch.Events = []string{job.NotifyFailing}
				b, _ := json.Marshal(ch)
				if r := e.do("POST", "/api/v1/channels/"+ch.Name, string(b)); r.status != http.StatusOK {
					t.Fatalf("POST back %s: %d %s", ch.Name, r.status, r.body)
				}
			}
			ctx := context.Background()
			hook, _ := e.c.Channel(ctx, "hook")
			mail, _ := e.c.Channel(ctx, "mail")
			slack, _ := e.c.Channel(ctx, "slack")
			if hook.Secret != "hmac-key-1" || hook.URL != "https://user4:pw4@example.com/h?k=token5" || mail.Password != "smtp-pass-2" ||
				slack.URL != "https://hooks.slack.com/services/T000/B000/slacktoken3" || len(hook.Events) != 1 {
				t.Errorf("after an edit of the shown channels: hook %+v, mail %+v, slack %+v; want their secrets kept", hook, mail, slack)
			}
		})
	}
}

// TestChannelScopes (docs/security.md): only an admin token reads or
// configures channels (their addresses are where the server sends), a
// command channel included (admin includes exec); incidents are read
// with a read token.
func TestChannelScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: allTokens(t)})
	hook := `{"type":"webhook","url":"https://example.com/h"}`
	cmd := `{"type":"command","command":["/usr/local/bin/page"]}`
	for _, c := range []struct {
		token, method, path, body string
		want                      int
	}{
		{readToken, "GET", "/api/v1/incidents", "", http.StatusOK},
		{readToken, "GET", "/api/v1/channels", "", http.StatusForbidden},
		{writeToken, "POST", "/api/v1/channels/ops", hook, http.StatusForbidden},
		{execToken, "POST", "/api/v1/channels/ops", hook, http.StatusForbidden},
		{execToken, "POST", "/api/v1/channels/pager", cmd, http.StatusForbidden},
		{adminToken, "POST", "/api/v1/channels/pager", cmd, http.StatusOK},
		{writeToken, "DELETE", "/api/v1/channels/pager", "", http.StatusForbidden},
		{writeToken, "POST", "/api/v1/channels/pager/test", "", http.StatusForbidden},
		{adminToken, "POST", "/api/v1/channels/pager/test", "", http.StatusCreated},
		{adminToken, "DELETE", "/api/v1/channels/pager", "", http.StatusOK},
		{adminToken, "DELETE", "/api/v1/channels/pager", "", http.StatusNotFound},
		{adminToken, "POST", "/api/v1/channels/bad", `{"type":"pager"}`, http.StatusBadRequest},
	} {
		if r := e.doAs(c.token, c.method, c.path, c.body); r.status != c.want {
			t.Errorf("%s %s as %s: %d %s, want %d", c.method, c.path, c.token, r.status, r.body, c.want)
		}
	}
}

// TestIncidentsAPI: GET /incidents lists a schedule's incidents, newest
// first, filtered by schedule and open, paged by cursor; the schedule
// document carries its monitor.
func TestIncidentsAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	r := e.do("POST", "/api/v1/schedules", `{"name":"late","every":"1m","kind":"ok","queue":"nobody","monitor":{"start_grace":"5s","max_duration":"1h","alert_after_failures":2,"channels":["ops"]}}`)
	if r.status != http.StatusCreated || !strings.Contains(string(r.body), `"monitor":{"start_grace":"5s","max_duration":"1h0m0s","alert_after_failures":2,"channels":["ops"]}`) {
		t.Fatalf("POST schedule with a monitor: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/schedules", `{"name":"bad","every":"1m","kind":"ok","monitor":{"start_grace":"1ms"}}`); r.status != http.StatusBadRequest ||
		!strings.Contains(string(r.body), "monitor.start_grace") {
		t.Errorf("a monitor's bad grace: %d %s", r.status, r.body)
	}
	if r := e.do("POST", "/api/v1/schedules", `{"name":"bad","every":"1m","kind":"ok","monitor":{"grace":"1s"}}`); r.status != http.StatusBadRequest {
		t.Errorf("a monitor's unknown field: %d %s", r.status, r.body)
	}
	ctx := context.Background()
	at := time.Now().Add(2 * time.Minute) // the first tick not fired: a missed start
	e.c.CheckMonitors(ctx, at)
	r = e.do("GET", "/api/v1/incidents?schedule=late&open=true", "")
	var page struct {
		Incidents  []hopper.Incident `json:"incidents"`
		NextCursor string            `json:"next_cursor"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != http.StatusOK || len(page.Incidents) != 1 ||
		page.Incidents[0].Problem != job.ProblemMissedStart || page.Incidents[0].Subject != "schedule:late" {
		t.Fatalf("GET incidents: %d %s (%v)", r.status, r.body, err)
	}
	if r := e.do("GET", "/api/v1/incidents?schedule=other", ""); r.status != http.StatusOK || !strings.Contains(string(r.body), `"incidents":[]`) {
		t.Errorf("another schedule's incidents: %d %s", r.status, r.body)
	}
	if r := e.do("GET", "/api/v1/incidents?open=maybe", ""); r.status != http.StatusBadRequest {
		t.Errorf("open=maybe: %d %s", r.status, r.body)
	}
}

// TestMonitorEmptyListsAreArrays: the lists of the monitor's routes are
// JSON arrays when empty, never null, on every store: incidents,
// channels, checks and a check's recent pings.
func TestMonitorEmptyListsAreArrays(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st})
			var inc struct {
				Incidents json.RawMessage `json:"incidents"`
			}
			e.do("GET", Prefix+"/incidents", "").ok(200, &inc)
			var chans, checks json.RawMessage
			e.do("GET", Prefix+"/channels", "").ok(200, &chans)
			e.do("GET", Prefix+"/checks", "").ok(200, &checks)
			e.do("POST", Prefix+"/checks", `{"name":"backup","period":"1h"}`).ok(201, nil)
			var detail struct {
				RecentPings json.RawMessage `json:"recent_pings"`
			}
			e.do("GET", Prefix+"/checks/backup", "").ok(200, &detail)
			for what, got := range map[string]json.RawMessage{"incidents": inc.Incidents, "channels": chans, "checks": checks,
				"recent_pings": detail.RecentPings} {
				if string(got) != "[]" {
					t.Errorf("%s of an empty store: %s, want []", what, got)
				}
			}
		})
	}
}
