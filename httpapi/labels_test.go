package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestMetaAndTags: a job request's meta and tags are kept, GET /jobs and
// /jobs/count filter by ?tag=, and a bad tag or meta is refused naming
// the field.
func TestMetaAndTags(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			id := e.enqueue(`{"kind":"ok","meta":{"tenant":"acme","request":"r-1"},"tags":["billing","eu"]}`)
			e.enqueue(`{"kind":"ok","tags":["eu"]}`)
			e.enqueue(`{"kind":"ok"}`)
			j := e.job(id)
			if !maps.Equal(j.Meta, map[string]string{"tenant": "acme", "request": "r-1"}) || !slices.Equal(j.Tags, []string{"billing", "eu"}) {
				t.Errorf("stored meta %v tags %q", j.Meta, j.Tags)
			}
			var page struct{ Jobs []*hopper.Job }
			e.do("GET", "/api/v1/jobs?tag=billing", "").ok(http.StatusOK, &page)
			if len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].Meta["tenant"] != "acme" {
				t.Errorf("GET ?tag=billing: %+v", page.Jobs)
			}
			var n struct{ Count int }
			e.do("GET", "/api/v1/jobs/count?tag=eu", "").ok(http.StatusOK, &n)
			if n.Count != 2 {
				t.Errorf("count ?tag=eu: %d, want 2", n.Count)
			}
			e.do("GET", "/api/v1/jobs?tag=a%20b", "").fails(http.StatusBadRequest, CodeInvalid, "tag")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","tags":["no spaces"]}`).fails(http.StatusBadRequest, CodeInvalid, "tags")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","tags":["x","x"]}`).fails(http.StatusBadRequest, CodeInvalid, "tags")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","meta":{"":"v"}}`).fails(http.StatusBadRequest, CodeInvalid, "meta")
		})
	}
}

// TestTraceparentHeader: a well-formed traceparent (and its tracestate)
// on an enqueue goes into the job's metadata, unless the body's meta
// gives one; a malformed one is ignored.
func TestTraceparentHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	send := func(body, traceparent string) *hopper.Job {
		t.Helper()
		h := http.Header{"Traceparent": {traceparent}, "Tracestate": {"vendor=x"}}
		var res enqueued
		e.doWith(e.token, h, "POST", "/api/v1/jobs", body).ok(http.StatusCreated, &res)
		return e.job(res.ID)
	}
	if j := send(`{"kind":"ok"}`, tp); j.Meta["traceparent"] != tp || j.Meta["tracestate"] != "vendor=x" {
		t.Errorf("meta %v, want the header's trace context", j.Meta)
	}
	if j := send(`{"kind":"ok","meta":{"traceparent":"mine"}}`, tp); j.Meta["traceparent"] != "mine" {
		t.Errorf("meta %v, want the body's traceparent kept", j.Meta)
	}
	for _, bad := range []string{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "garbage"} {
		if j := send(`{"kind":"ok"}`, bad); len(j.Meta) != 0 {
			t.Errorf("traceparent %q: meta %v, want none", bad, j.Meta)
		}
	}
	long := http.Header{"Traceparent": {tp}, "Tracestate": {"v=" + strings.Repeat("x", 511)}} // 513 bytes
	var res enqueued
	e.doWith(e.token, long, "POST", "/api/v1/jobs", `{"kind":"ok"}`).ok(http.StatusCreated, &res)
	if j := e.job(res.ID); j.Meta["traceparent"] != tp || j.Meta["tracestate"] != "" {
		t.Errorf("meta %v, want the traceparent and no tracestate over 512 bytes", j.Meta)
	}
}
