package cli

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/pipenet"
	"github.com/hopperq/hopper/metrics"
)

// TestWriteDeadline: serve's HTTP server cuts off a client that sends a
// request and never reads the response — here the API's OpenAPI document,
// through serve's own routes — once httpWriteTimeout has passed, instead
// of holding the connection and its goroutine for good. The connection is
// a pipe, which holds no byte the client does not read, in a synctest
// bubble, whose clock is fake: no test waits a minute.
func TestWriteDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		log := slog.New(slog.DiscardHandler)
		c, err := hopper.NewClient(hopper.Config{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		defer c.StopNow()
		m := metrics.New(metrics.Options{NoPool: true})
		m.Attach(c)
		h, _, err := httpHandler(c, m, &httpauth.Auth{}, nil, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		srv := newHTTPServer(h, log, context.Background())
		conn, closed := pipenet.Serve(t, srv)
		start := time.Now()
		if _, err := io.WriteString(conn, "GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		select { // the client reads nothing
		case <-closed:
		case <-time.After(10 * httpWriteTimeout): // fake time: the dashboard's ticker keeps the bubble's clock going
			t.Fatalf("the connection of a client that does not read is still open after %s", time.Since(start))
		}
		if took := time.Since(start); took != httpWriteTimeout {
			t.Errorf("the connection of a client that does not read closed after %s, want the write timeout, %s", took, httpWriteTimeout)
		}
	})
}
