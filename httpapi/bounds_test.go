package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestIntegerBounds: on every store, max_attempts and priority beyond the
// bounds are a 400 naming the field — a job, a job of a batch, a schedule,
// a reschedule — and nothing is stored; the bounds themselves are kept.
func TestIntegerBounds(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			for _, tc := range []struct{ opt, field string }{
				{fmt.Sprintf(`"max_attempts":%d`, hopper.MaxAttemptsLimit+1), "max_attempts"},
				{`"max_attempts":2147483648`, "max_attempts"},
				{fmt.Sprintf(`"priority":%d`, hopper.MaxPriority+1), "priority"},
				{fmt.Sprintf(`"priority":%d`, hopper.MinPriority-1), "priority"},
				{`"priority":-9223372036854775808`, "priority"},
			} {
				e.do("POST", "/api/v1/jobs", `{"kind":"ok",`+tc.opt+`}`).fails(400, CodeInvalid, tc.field, "between")
				e.do("POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"ok",`+tc.opt+`}]}`).fails(400, CodeInvalid, "jobs[1]."+tc.field, "between")
				e.do("POST", "/api/v1/schedules", `{"name":"s","every":"1m","kind":"ok",`+tc.opt+`}`).fails(400, CodeInvalid, tc.field, "between")
			}
			if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 0 {
				t.Errorf("%d jobs stored after refused requests", n)
			}
			e.do("GET", "/api/v1/schedules/s", "").fails(404, CodeNotFound, "name")

			var j hopper.Job
			e.do("POST", "/api/v1/jobs", fmt.Sprintf(`{"kind":"ok","delay":"1h","max_attempts":%d,"priority":%d}`, hopper.MaxAttemptsLimit, hopper.MaxPriority)).
				ok(http.StatusCreated, &j)
			got := e.job(j.ID)
			if got.MaxAttempts != hopper.MaxAttemptsLimit || got.Priority != hopper.MaxPriority {
				t.Errorf("job at the bounds: max attempts %d priority %d", got.MaxAttempts, got.Priority)
			}
			path := fmt.Sprintf("/api/v1/jobs/%d/reschedule", j.ID)
			for _, p := range []int{hopper.MaxPriority + 1, hopper.MinPriority - 1} {
				e.do("POST", path, fmt.Sprintf(`{"priority":%d}`, p)).fails(400, CodeInvalid, "priority", "between")
			}
			e.do("POST", path, fmt.Sprintf(`{"priority":%d}`, hopper.MinPriority)).ok(200, &j)
			if j.Priority != hopper.MinPriority {
				t.Errorf("rescheduled to priority %d: got %d", hopper.MinPriority, j.Priority)
			}
		})
	}
}

// TestBodyTimeout: a request whose body never arrives whole ends, once
// Options.BodyTimeout has passed, in a 408 with code timeout whose message
// names no address of the connection, and changes nothing.
func TestBodyTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: Options{BodyTimeout: 200 * time.Millisecond}})
	for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/batch", "/api/v1/schedules"} {
		conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A bound for the test only: without the body's deadline the
		// server would wait for the rest forever.
		conn.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"kind\":", path, e.srv.Listener.Addr())
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("POST %s with a body that never arrives: no response: %v", path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		r := response{status: res.StatusCode, header: res.Header, body: b, t: t, req: "POST " + path}
		r.fails(http.StatusRequestTimeout, CodeTimeout, "body", "did not arrive within 200ms")
		for _, leak := range []string{"127.0.0.1", "tcp", "i/o timeout"} {
			if strings.Contains(string(b), leak) {
				t.Errorf("POST %s: the 408 says %q: %s", path, leak, b)
			}
		}
	}
	if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 0 {
		t.Errorf("%d jobs stored from bodies that never arrived", n)
	}
}
