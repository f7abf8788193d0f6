package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// list returns a JSON array of n strings made by f.
func list(n int, f func(i int) string) string {
	items := make([]string, n)
	for i := range items {
		b, _ := json.Marshal(f(i))
		items[i] = string(b)
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestHostileBodies (docs/security.md): on every store, hostile bodies on
// the channel, queue limit, schedule and incident routes — 10 MB, 100,000
// names in a list, very long values, bytes that are not UTF-8, NUL,
// unknown fields — are refused with 400 naming the field and the reason,
// in a short message that does not echo the input, and change nothing.
func TestHostileBodies(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1<<20)
	mail := func(extra string) string {
		return `{"type":"email","smtp_addr":"smtp.example.com:25","from":"a@example.com","to":["b@example.com"]` + extra + `}`
	}
	hook := func(extra string) string { return `{"type":"webhook","url":"https://example.com/h"` + extra + `}` }
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: st, auth: allTokens(t)})
			e.token = adminToken
			for _, c := range []struct {
				method, path, body string
				code, field, want  string
			}{
				{"POST", "/api/v1/channels/c", `{"type":"webhook","url":"https://example.com/` + strings.Repeat("x", 10<<20) + `"}`, CodeTooLarge, "body", "larger than the limit"},
				{"POST", "/api/v1/channels/c", mail(`,"to":` + list(100_000, func(i int) string { return fmt.Sprintf("%d@e.co", i) })), CodeInvalid, "to", "more than the limit of 100"},
				{"POST", "/api/v1/channels/c", mail(`,"to":["` + strings.Repeat("b", 400) + `@example.com"]`), CodeInvalid, "to[0]", "longer than the limit of 320"},
				{"POST", "/api/v1/channels/c", hook(`,"secret":"` + strings.Repeat("s", 5000) + `"`), CodeInvalid, "secret", "longer than the limit"},
				{"POST", "/api/v1/channels/c", `{"type":"slack","url":"https://hooks.slack.com/` + long[:9000] + `"}`, CodeInvalid, "url", "longer than the limit"},
				{"POST", "/api/v1/channels/c", `{"type":"slack","url":"https://"}`, CodeInvalid, "url", "with a host"},
				{"POST", "/api/v1/channels/c", hook(`,"secret":"a\u0000b"`), CodeInvalid, "secret", "NUL"},
				{"POST", "/api/v1/channels/c", mail(`,"password":"p\u0000"`), CodeInvalid, "password", "NUL"},
				{"POST", "/api/v1/channels/c", `{"type":"command","command":` + list(100_000, func(int) string { return "a" }) + `}`, CodeInvalid, "command", "more than the limit of 1000"},
				{"POST", "/api/v1/channels/c", `{"type":"command","command":["/bin/true","a\u0000"]}`, CodeInvalid, "command[1]", "NUL"},
				{"POST", "/api/v1/channels/c", hook(`,"events":["job_dead","job_dead"]`), CodeInvalid, "events[1]", "listed twice"},
				{"POST", "/api/v1/channels/c", hook(`,"events":` + list(100_000, func(int) string { return "job_dead" })), CodeInvalid, "events", "more than the 6"},
				{"POST", "/api/v1/channels/c", hook(`,"colour":"red"`), CodeInvalid, "colour", "unknown field"},
				{"POST", "/api/v1/channels/c", "{\"type\":\"webhook\",\"url\":\"https://example.com/caf\xe9\"}", CodeInvalid, "body", "not valid UTF-8"},
				{"POST", "/api/v1/channels/c", hook(`,"name":"` + long + `"`), CodeInvalid, "name", "differs from the path's"},
				{"POST", "/api/v1/channels/" + strings.Repeat("n", 2000), hook(""), CodeInvalid, "name", "longer than"},
				{"POST", "/api/v1/queues/q/limits", `{"rate":"` + long + `"}`, CodeInvalid, "rate", "longer than the limit of 64"},
				{"POST", "/api/v1/queues/q/limits", `{"concurrency":1000000000000000000000}`, CodeInvalid, "concurrency", ""},
				{"POST", "/api/v1/queues/q/limits", `{"concurrency":2,"concurrncy":3}`, CodeInvalid, "concurrncy", "unknown field"},
				{"POST", "/api/v1/queues/q/limits", `{"rate":"10/1s","burst":` + strings.Repeat("9", 400) + `}`, CodeInvalid, "burst", ""},
				{"POST", "/api/v1/queues/q/limits", "{\"rate\":\"1/1s\xff\"}", CodeInvalid, "body", "not valid UTF-8"},
				{"POST", "/api/v1/queues/q/limits", `{"concurrency":` + strings.Repeat("1", 10<<20) + `}`, CodeTooLarge, "body", ""},
				{"POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok","monitor":{"alert_after_failures":1,"channels":` +
					list(100_000, func(i int) string { return fmt.Sprint("c", i) }) + `}}`, CodeInvalid, "monitor.channels", "more than the limit of 100"},
				{"POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok","monitor":{"channels":["ok","` + long[:2000] + `"]}}`, CodeInvalid, "monitor.channels[1]", "longer than"},
				{"POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok","monitor":{"channels":["a\u0000"]}}`, CodeInvalid, "monitor.channels[0]", "control character"},
				{"POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok","monitor":{"chanels":["a"]}}`, CodeInvalid, "chanels", "unknown field"},
				{"GET", "/api/v1/incidents?schedule=a%00b", "", CodeInvalid, "schedule", "control character"},
				{"GET", "/api/v1/incidents?schedule=" + strings.Repeat("s", 2000), "", CodeInvalid, "schedule", "longer than"},
				{"GET", "/api/v1/incidents?schedule=%ff", "", CodeInvalid, "schedule", "UTF-8"},
			} {
				r := e.do(c.method, c.path, c.body)
				name := c.path
				if len(name) > 60 {
					name = name[:60]
				}
				r.req = fmt.Sprintf("%s %s (%s)", c.method, name, c.want)
				var want []string
				if c.want != "" {
					want = append(want, c.want)
				}
				r.fails(400, c.code, c.field, want...)
				if len(r.body) > 1024 {
					t.Errorf("%s: a response of %d bytes: the input is echoed", r.req, len(r.body))
				}
			}
			ctx := context.Background()
			if chs, err := e.c.Channels(ctx); err != nil || len(chs) != 0 {
				t.Errorf("channels after refused requests: %v, %v", chs, err)
			}
			if scs, err := e.c.Schedules(ctx); err != nil || len(scs) != 0 {
				t.Errorf("schedules after refused requests: %v, %v", scs, err)
			}
			qs, err := e.c.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range qs {
				if q.Concurrency != 0 || q.Rate != (hopper.Rate{}) {
					t.Errorf("queue %s after refused requests: %+v", q.Name, q)
				}
			}
			// The bounds themselves are taken.
			e.do("POST", "/api/v1/channels/c", mail(`,"to":`+list(100, func(i int) string { return fmt.Sprintf("u%d@example.com", i) }))).ok(http.StatusOK, nil)
			e.do("POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok","monitor":{"alert_after_failures":1,"channels":`+
				list(100, func(i int) string { return fmt.Sprint("c", i) })+`}}`).ok(http.StatusCreated, nil)
		})
	}
}

// TestCrossOriginEveryRoute: every route that changes something — the
// newest ones (channels, queue limits, run now, backfill) as the oldest —
// refuses a cross-origin browser request (CSRF), whatever the token, and
// changes nothing.
func TestCrossOriginEveryRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: allTokens(t)})
	e.do("POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok"}`).fails(401, CodeUnauthorized, "")
	e.token = adminToken
	e.do("POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok"}`).ok(http.StatusCreated, nil)
	n := 0
	for _, rt := range (&api{}).table() {
		if rt.method == http.MethodGet {
			continue
		}
		path := strings.NewReplacer("{id}", "1", "{name}", "s").Replace(rt.pattern)
		for _, h := range []http.Header{{"Sec-Fetch-Site": {"cross-site"}}, {"Origin": {"https://evil.example"}}} {
			e.doWith(adminToken, h, rt.method, path, `{}`).fails(http.StatusForbidden, CodeForbidden, "", "cross-origin")
		}
		n++
	}
	if n < 30 {
		t.Fatalf("%d routes that change something, want them all", n)
	}
	sc, err := e.c.GetSchedule(context.Background(), "s")
	if err != nil || sc.Paused || sc.LastJobID != 0 {
		t.Errorf("the schedule after cross-origin requests: %+v, %v", sc, err)
	}
	if n := e.count(); n != 0 {
		t.Errorf("%d jobs after cross-origin requests", n)
	}
}

// TestRetryRunsCommandScope (docs/security.md, decision 91): a write token
// is not a shell. Retrying a dead exec job or notification runs a command
// again (a notification's channel may be a command), so it needs the exec
// scope, as enqueueing one and running its schedule now do: ids naming one
// are refused with 403 and nothing is retried; "all" retries every other
// dead job and leaves those dead. Enqueueing a notification needs admin.
func TestRetryRunsCommandScope(t *testing.T) {
	t.Parallel()
	dies := func(c *hopper.Config) {
		for _, k := range []string{"exec", hopper.NotifyKind} {
			hopper.RegisterRaw(c.Workers, k, func(context.Context, json.RawMessage) (any, error) {
				return nil, hopper.Permanent(fmt.Errorf("dead on purpose"))
			}, nil)
		}
	}
	e := newEnv(t, envOpts{auth: tokens(t), cfg: dies})
	e.token = adminToken
	dead := func(token, body string) hopper.ID {
		t.Helper()
		var res enqueued
		e.doAs(token, "POST", "/api/v1/jobs", body).ok(http.StatusCreated, &res)
		if j := e.run(); j.ID != res.ID || j.State != hopper.StateDead {
			t.Fatalf("job %d: %+v", res.ID, j)
		}
		return res.ID
	}
	const notify = `{"kind":"hopper.notify","args":{"channel":"cmd","notification":{"event":"test","status":"event","at":"2026-01-01T00:00:00Z"}}}`
	e.doAs(writeToken, "POST", "/api/v1/jobs", notify).fails(403, CodeForbidden, "", "server's notifications", "admin")
	e.doAs(execToken, "POST", "/api/v1/jobs", notify).fails(403, CodeForbidden, "", "server's notifications")
	e.doAs(writeToken, "POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},`+notify+`]}`).fails(403, CodeForbidden, "", "server's notifications")
	execID := dead(execToken, `{"kind":"exec","args":{"command":"true"}}`)
	noteID := dead(adminToken, notify)
	failID := dead(writeToken, `{"kind":"fail"}`)
	if n := e.count(); n != 3 {
		t.Fatalf("%d jobs, want the 3 dead ones", n)
	}
	for _, id := range []hopper.ID{execID, noteID} {
		e.doAs(writeToken, "POST", "/api/v1/dlq/retry", fmt.Sprintf(`{"ids":[%d,%d]}`, failID, id)).
			fails(403, CodeForbidden, "", fmt.Sprintf("retrying job %d", id), "runs commands on the server", "exec or admin", "write scope")
	}
	for _, id := range []hopper.ID{execID, noteID, failID} {
		if st := e.job(id).State; st != hopper.StateDead {
			t.Fatalf("job %d %s after a refused retry, want dead", id, st)
		}
	}
	var n map[string]int
	e.doAs(writeToken, "POST", "/api/v1/dlq/retry", `{"all":true}`).ok(200, &n)
	if n["retried"] != 1 || e.job(failID).State == hopper.StateDead || e.job(execID).State != hopper.StateDead || e.job(noteID).State != hopper.StateDead {
		t.Fatalf("write token's retry of all: %v; jobs %s %s %s, want only the fail job retried",
			n, e.job(failID).State, e.job(execID).State, e.job(noteID).State)
	}
	e.doAs(execToken, "POST", "/api/v1/dlq/retry", fmt.Sprintf(`{"ids":[%d]}`, execID)).ok(200, &n)
	e.doAs(execToken, "POST", "/api/v1/dlq/retry", `{"all":true}`).ok(200, &n)
	if n["retried"] != 1 || e.job(execID).State == hopper.StateDead || e.job(noteID).State == hopper.StateDead {
		t.Fatalf("exec token's retries: %v; jobs %s %s", n, e.job(execID).State, e.job(noteID).State)
	}
	// Running or backfilling a schedule of notifications needs exec too.
	e.doAs(adminToken, "POST", "/api/v1/schedules", `{"name":"n","every":"1h","kind":"hopper.notify","args":{"channel":"cmd","notification":{"event":"test","status":"event","at":"2026-01-01T00:00:00Z"}}}`).ok(http.StatusCreated, nil)
	e.doAs(writeToken, "POST", "/api/v1/schedules/n/run", "").fails(403, CodeForbidden, "", "running a schedule of kind hopper.notify runs commands")
}
