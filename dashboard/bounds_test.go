package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/internal/pipenet"
)

// TestFormTimeout: a post whose form never arrives whole ends, once
// Options.BodyTimeout has passed, in a 408 page that names no address of
// the connection, and the action is not done.
func TestFormTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{BodyTimeout: 200 * time.Millisecond})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	for _, path := range []string{fmt.Sprintf("/jobs/%d/cancel", id), "/bulk", "/login"} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// A bound for the test only: without the form's deadline the
		// server would wait for the rest forever.
		conn.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\naction=cancel&ids=%d&back=", path, srv.Listener.Addr(), id)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("POST %s with a form that never arrives: no response: %v", path, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "did not arrive within 200ms") {
			t.Errorf("POST %s: status %d, want 408 saying when: %s", path, res.StatusCode, clip(string(b)))
		}
		for _, leak := range []string{"127.0.0.1", "tcp", "i/o timeout"} {
			if strings.Contains(string(b), leak) {
				t.Errorf("POST %s: the 408 page says %q", path, leak)
			}
		}
	}
	if j := e.job(id); j.State != hopper.StateScheduled {
		t.Errorf("job %d is %s after posts that never arrived, want scheduled", id, j.State)
	}
}

// TestFormTooLarge: a form over MaxFormBytes is refused with 413 and the
// action is not done.
func TestFormTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	form := url.Values{"action": {"cancel"}, "ids": {fmt.Sprint(id)}, "confirm": {"1"}, "pad": {strings.Repeat("x", MaxFormBytes)}}
	if r := e.post("/bulk", "", form); r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /bulk of %d bytes: status %d, want 413: %s", len(form.Encode()), r.StatusCode, clip(r.body))
	}
	if j := e.job(id); j.State != hopper.StateScheduled {
		t.Errorf("job %d is %s after a refused post, want scheduled", id, j.State)
	}
}

// TestStreamWriteDeadline: the live stream outlives a server's
// WriteTimeout (it sets its own deadline at each write, as hopper serve's
// one-minute WriteTimeout would otherwise cut every stream), and a browser
// that stops reading is cut off within heartbeat+streamWriteTimeout rather
// than holding the stream until maxStream. The connection is a pipe, which
// holds no byte the client does not read, in a synctest bubble, whose
// clock is fake.
func TestStreamWriteDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, err := hopper.NewClient(hopper.Config{Logger: dashtest.Quiet()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.StopNow()
		h := New(c, Options{Logger: dashtest.Quiet()}).(*handler)
		defer h.Close()
		const writeTimeout = time.Minute
		conn, closed := pipenet.Serve(t, &http.Server{Handler: h, WriteTimeout: writeTimeout})
		start := time.Now()
		io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /events: %v %v", res, err)
		}
		// Read the stream for three WriteTimeouts: beats keep coming.
		sc := bufio.NewScanner(res.Body)
		pings := 0
		for time.Since(start) < 3*writeTimeout && sc.Scan() {
			if sc.Text() == "event: beat" {
				pings++
			}
		}
		if want := int(3 * writeTimeout / heartbeat); pings < want {
			t.Fatalf("after %s: %d beats (%v), want %d: the stream was cut", time.Since(start), pings, sc.Err(), want)
		}
		// Stop reading.
		stopped := time.Now()
		select {
		case <-closed:
		case <-time.After(maxStream):
			t.Fatalf("the stream of a browser that stopped reading is still open %s later", time.Since(stopped))
		}
		if took := time.Since(stopped); took > heartbeat+streamWriteTimeout {
			t.Errorf("the stream of a browser that stopped reading was cut %s later, want at most %s", took, heartbeat+streamWriteTimeout)
		}
	})
}

// TestOverviewBounded: with 2,000 queues the overview shows a page of
// them (PageSize, by name), with links to the others and the totals of
// all, and the job list's filter takes a queue's name instead of listing
// 2,000 in a menu: neither page grows with the queues clients invent.
func TestOverviewBounded(t *testing.T) {
	t.Parallel()
	const queues = 2000
	e := newEnv(t, Options{})
	reqs := make([]hopper.EnqueueRequest, queues)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: fmt.Sprintf("q%04d", i)}}
	}
	if _, err := e.c.EnqueueMany(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`data-queue-row="([^"]+)"`)
	page := func(target string) (string, []string) {
		t.Helper()
		r := e.get(target, "")
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", target, r.StatusCode)
		}
		var names []string
		for _, m := range rows.FindAllStringSubmatch(r.body, -1) {
			names = append(names, m[1])
		}
		return r.body, names
	}
	html, names := page("/")
	if len(html) > 200<<10 || len(names) != DefaultPageSize || names[0] != "q0000" || names[49] != "q0049" {
		t.Errorf("overview of %d queues: %d bytes, rows %v…; want at most 200 KiB and q0000 to q0049", queues, len(html), names[:min(3, len(names))])
	}
	for _, want := range []string{"queues 1–50 of 2,000", `href="/?qpage=2"`, `name="queue"`} {
		if !strings.Contains(html, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if n := cell(t, html, "*", "available"); n != queues {
		t.Errorf("overview totals: %d available, want %d", n, queues)
	}
	if html, names = page("/?qpage=2"); len(names) != DefaultPageSize || names[0] != "q0050" || !strings.Contains(html, `href="/"`) {
		t.Errorf("page 2 of the queues: rows %v…", names[:min(3, len(names))])
	}
	if _, names = page("/?qpage=999"); len(names) != DefaultPageSize || names[len(names)-1] != "q1999" {
		t.Errorf("a page past the last: rows …%v, want the last page", names[max(0, len(names)-3):])
	}
	if r := e.get("/?qpage=first", ""); r.StatusCode != http.StatusBadRequest {
		t.Errorf("GET /?qpage=first: %d, want 400", r.StatusCode)
	}
	r := e.get("/jobs", "")
	if len(r.body) > 100<<10 || strings.Contains(r.body, `<option value="q0001"`) || !strings.Contains(r.body, `<input type="search" name="queue"`) {
		t.Errorf("job list with %d queues: %d bytes; want a queue field, not a menu of every queue", queues, len(r.body))
	}
	r = e.get("/jobs?queue=q1234", "")
	if ids := rowIDs(r.body); len(ids) != 1 || !strings.Contains(r.body, `value="q1234"`) {
		t.Errorf("jobs of queue q1234: %v", ids)
	}
}
