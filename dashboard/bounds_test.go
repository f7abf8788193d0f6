package dashboard

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
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
// that stops reading is cut off within keepAlive+streamWriteTimeout rather
// than holding the stream until maxStream. The connection is a pipe, which
// holds no byte the client does not read, in a synctest bubble, whose
// clock is fake.
func TestStreamWriteDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		c, err := hopper.NewClient(hopper.Config{Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.StopNow()
		h := New(c, Options{Logger: quiet()}).(*handler)
		defer h.Close()
		const writeTimeout = time.Minute
		srv := &http.Server{Handler: h, WriteTimeout: writeTimeout}
		closed := make(chan struct{})
		srv.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed {
				close(closed)
			}
		}
		ln := pipenet.New()
		served := make(chan struct{})
		go func() {
			defer close(served)
			srv.Serve(ln)
		}()
		defer func() {
			srv.Close()
			<-served
		}()
		conn, err := ln.Dial()
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		io.WriteString(conn, "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET /events: %v %v", res, err)
		}
		// Read the stream for three WriteTimeouts: keep-alives keep coming.
		sc := bufio.NewScanner(res.Body)
		pings := 0
		for time.Since(start) < 3*writeTimeout && sc.Scan() {
			if sc.Text() == ": keep-alive" {
				pings++
			}
		}
		if want := int(3 * writeTimeout / keepAlive); pings < want {
			t.Fatalf("after %s: %d keep-alives (%v), want %d: the stream was cut", time.Since(start), pings, sc.Err(), want)
		}
		// Stop reading.
		stopped := time.Now()
		select {
		case <-closed:
		case <-time.After(maxStream):
			t.Fatalf("the stream of a browser that stopped reading is still open %s later", time.Since(stopped))
		}
		if took := time.Since(stopped); took > keepAlive+streamWriteTimeout {
			t.Errorf("the stream of a browser that stopped reading was cut %s later, want at most %s", took, keepAlive+streamWriteTimeout)
		}
	})
}
