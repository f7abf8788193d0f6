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

// TestPageBytesBounded: a page of jobs stops before its JSON passes
// MaxPageBytes (8 MiB by default: 1,000 jobs of 1 MiB args made a response
// of a gigabyte), with next_cursor, and holds one job at least; following
// the cursors lists every job once, in order, both ways. Pages are read
// from the store in chunks, so pages of more than a chunk are checked at
// and around its edges.
func TestPageBytesBounded(t *testing.T) {
	t.Parallel()
	// all follows the cursors of path from the start and returns the IDs
	// listed and the largest page's size.
	all := func(e *env, path string) (ids []hopper.ID, largest int) {
		t.Helper()
		cursor := ""
		for range 1000 {
			var p jobPage
			r := e.do("GET", path+cursor, "").ok(http.StatusOK, &p)
			largest = max(largest, len(r.body))
			if len(p.Jobs) == 0 {
				t.Fatalf("%s%s: an empty page: %s", path, cursor, r.body)
			}
			for _, j := range p.Jobs {
				ids = append(ids, j.ID)
			}
			if p.NextCursor == "" {
				return ids, largest
			}
			if want := fmt.Sprint(p.Jobs[len(p.Jobs)-1].ID); p.NextCursor != want {
				t.Fatalf("%s%s: next_cursor %s, want the last job's ID %s", path, cursor, p.NextCursor, want)
			}
			cursor = "&cursor=" + p.NextCursor
		}
		t.Fatalf("%s: no end", path)
		return nil, 0
	}
	inOrder := func(ids []hopper.ID, n int, desc bool) bool {
		if len(ids) != n {
			return false
		}
		for i := 1; i < len(ids); i++ {
			if ids[i] > ids[i-1] != !desc {
				return false
			}
		}
		return true
	}

	t.Run("large args", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{})
		big := strings.Repeat("x", 1<<20-100) // the largest args the core takes, nearly
		const n = 9                           // 9 MiB of args
		for range n {
			e.enqueue(`{"kind":"ok","delay":"1h","args":{"s":"` + big + `"}}`)
		}
		for _, order := range []string{"", "&order=desc"} {
			ids, largest := all(e, "/api/v1/jobs?limit=1000"+order)
			if largest > DefaultMaxPageBytes+1 || largest < DefaultMaxPageBytes/2 {
				t.Errorf("order %q: the largest page is %d bytes, want at most %d and most of it", order, largest, DefaultMaxPageBytes)
			}
			if !inOrder(ids, n, order != "") {
				t.Errorf("order %q: listed %v, want each of %d jobs once, in order", order, ids, n)
			}
		}
	})

	t.Run("chunks", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{store: "sqlite", api: Options{MaxPageBytes: 40_000}})
		const n = 2*pageChunk + 50
		var b strings.Builder
		b.WriteString(`{"jobs":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"kind":"ok","delay":"1h"}`)
		}
		b.WriteString(`]}`)
		e.do("POST", "/api/v1/jobs/batch", b.String()).ok(http.StatusCreated, nil)
		for _, limit := range []int{1000, pageChunk, pageChunk - 1, pageChunk + 1, n, n - 1, 7} {
			for _, order := range []string{"", "&order=desc"} {
				path := fmt.Sprintf("/api/v1/jobs?limit=%d%s", limit, order)
				ids, largest := all(e, path)
				if largest > 40_001 {
					t.Errorf("%s: a page of %d bytes, over the budget", path, largest)
				}
				if !inOrder(ids, n, order != "") {
					t.Errorf("%s: listed %d jobs, want each of %d once, in order", path, len(ids), n)
				}
			}
		}
		var p jobPage
		e.do("GET", "/api/v1/jobs?limit=5", "").ok(http.StatusOK, &p)
		if len(p.Jobs) != 5 || p.NextCursor == "" {
			t.Errorf("limit=5: %d jobs, next_cursor %q", len(p.Jobs), p.NextCursor)
		}
	})

	t.Run("one job over the budget", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, envOpts{api: Options{MaxPageBytes: 100}})
		for range 3 {
			e.enqueue(`{"kind":"ok","delay":"1h","args":{"s":"` + strings.Repeat("y", 500) + `"}}`)
		}
		ids, _ := all(e, "/api/v1/jobs?limit=10")
		if !inOrder(ids, 3, false) {
			t.Errorf("listed %v, want 3 jobs, one a page", ids)
		}
		var p jobPage
		e.do("GET", "/api/v1/dlq?limit=10", "").ok(http.StatusOK, &p)
	})
}
