package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// fuzzClient returns a client on a fresh in-memory store holding a job in
// each of the states scheduled, available, completed, cancelled and dead,
// and a schedule.
func fuzzClient(t *testing.T) *hopper.Client {
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, args json.RawMessage) (any, error) { return nil, nil }, nil)
	hopper.RegisterRaw(ws, "fail", func(ctx context.Context, args json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no"))
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.Enqueue(ctx, "ok", nil, nil) // 1: completed
	must(err)
	_, _, err = c.ProcessNext(ctx, now)
	must(err)
	_, err = c.Enqueue(ctx, "fail", nil, nil) // 2: dead
	must(err)
	_, _, err = c.ProcessNext(ctx, now)
	must(err)
	_, err = c.Enqueue(ctx, "ok", map[string]int{"n": 1}, &hopper.EnqueueOptions{Delay: time.Hour, UniqueKey: "u"}) // 3: scheduled
	must(err)
	_, err = c.Enqueue(ctx, "ok", nil, &hopper.EnqueueOptions{Delay: time.Hour}) // 4: cancelled
	must(err)
	_, err = c.Cancel(ctx, 4)
	must(err)
	_, err = c.Enqueue(ctx, "ok", nil, &hopper.EnqueueOptions{Queue: "q"}) // 5: available
	must(err)
	_, err = c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Cron: "0 3 * * *", Kind: "ok"})
	must(err)
	return c
}

// snapshot is everything the API could change, as JSON.
func snapshot(t *testing.T, c *hopper.Client) []byte {
	ctx := context.Background()
	jobs, err := c.List(ctx, hopper.ListOptions{Limit: hopper.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	scs, err := c.Schedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(struct {
		Jobs      []*hopper.Job
		Schedules []*hopper.Schedule
	}{jobs, scs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzAPI sends arbitrary requests to the API: it never answers 5xx, always
// answers JSON, and a request it refuses (4xx) changes nothing in the
// store.
func FuzzAPI(f *testing.F) {
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/api/v1/jobs", `{"kind":"ok","args":{"a":1},"queue":"q","priority":1,"max_attempts":3,"timeout":"1s","retry":{"strategy":"fixed","base":"1s"},"delay":"1m","unique_key":"k"}`},
		{"POST", "/api/v1/jobs", `{"kind":"ok","run_at":"2030-01-02T03:04:05Z","unique_key":"u"}`},
		{"POST", "/api/v1/jobs", `{"kind":"nope"}`},
		{"POST", "/api/v1/jobs", `{"kind":"ok","retry":{"strategy":"list","delays":["1s","2s"]}}`},
		{"POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"fail","queue":"x"}]}`},
		{"POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"ok","max_attempts":0}]}`},
		{"GET", "/api/v1/jobs?state=waiting,dead&queue=q&kind=ok&limit=2&cursor=1&order=desc", ""},
		{"GET", "/api/v1/jobs?created_after=2020-01-01T00:00:00Z&created_before=2030-01-01T00:00:00Z", ""},
		{"GET", "/api/v1/jobs/count?state=finished", ""},
		{"GET", "/api/v1/jobs/3", ""},
		{"POST", "/api/v1/jobs/3/cancel", ""},
		{"POST", "/api/v1/jobs/1/cancel", "{}"},
		{"POST", "/api/v1/jobs/3/reschedule", `{"delay":"5m","priority":2}`},
		{"POST", "/api/v1/jobs/1/reschedule", `{"run_at":"2031-01-01T00:00:00Z"}`},
		{"DELETE", "/api/v1/jobs/1", ""},
		{"DELETE", "/api/v1/jobs/3", ""},
		{"POST", "/api/v1/jobs/delete", `{"ids":[1,2,3]}`},
		{"GET", "/api/v1/dlq?limit=1", ""},
		{"POST", "/api/v1/dlq/retry", `{"ids":[2]}`},
		{"POST", "/api/v1/dlq/retry", `{"all":true}`},
		{"POST", "/api/v1/dlq/purge", `{"older_than":"1h"}`},
		{"POST", "/api/v1/dlq/purge", `{"ids":[2],"all":true}`},
		{"GET", "/api/v1/schedules", ""},
		{"GET", "/api/v1/schedules/s", ""},
		{"POST", "/api/v1/schedules", `{"name":"t","cron":"*/5 * * * *","time_zone":"Europe/Paris","kind":"ok","overlap":"allow"}`},
		{"POST", "/api/v1/schedules", `{"name":"t","every":"1h","fixed_delay":true,"kind":"ok","replace":true}`},
		{"POST", "/api/v1/schedules/s/pause", ""},
		{"POST", "/api/v1/schedules/s/resume", ""},
		{"DELETE", "/api/v1/schedules/s", ""},
		{"GET", "/api/v1/stats", ""},
		{"GET", "/api/v1/openapi.json", ""},
		{"PATCH", "/api/v1/jobs/1", "{}"},
		{"GET", "/api/v1/../../etc/passwd", ""},
	} {
		f.Add(s.method, s.path, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		if len(body) > 4096 || len(path) > 1024 {
			return
		}
		req, err := http.NewRequest(method, "http://hopper.test/"+strings.TrimPrefix(path, "/"), bytes.NewReader(body))
		if err != nil {
			return // not a request a server could receive
		}
		c := fuzzClient(t)
		defer c.StopNow()
		h := New(c, Options{Logger: slog.New(slog.DiscardHandler), MaxBodyBytes: 2048})
		before := snapshot(t, c)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q %q: %d %s", method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 300 && rec.Code < 400 {
			return // ServeMux cleaning the path: a redirect, nothing done
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q %q: %d, not JSON: %q", method, path, body, rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			var e apiErr
			if json.Unmarshal(rec.Body.Bytes(), &e); e.Error.Code == "" || e.Error.Message == "" {
				t.Fatalf("%s %q %q: %d without code or message: %s", method, path, body, rec.Code, rec.Body)
			}
			if after := snapshot(t, c); !bytes.Equal(before, after) {
				t.Fatalf("%s %q %q: refused with %d %s, but the store changed:\nbefore %s\nafter  %s",
					method, path, body, rec.Code, rec.Body, before, after)
			}
		}
	})
}
