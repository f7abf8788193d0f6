// Package reqbody bounds the request bodies the HTTP API and the dashboard
// read: how long the client may take to send one, and how large it may
// be. A body that does not arrive in time is a *TimeoutError, which each
// handler answers with 408, saying nothing of the connection (a read that
// timed out otherwise says "read tcp 127.0.0.1:8080->…: i/o timeout").
package reqbody

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// TimeoutError is a request body that did not arrive within its deadline.
type TimeoutError struct {
	// Timeout is the time the body had, from the moment the handler began;
	// zero if the deadline was the server's (the connection's deadline
	// could not be set), not Limit's.
	Timeout time.Duration
}

// Error says what happened, for the client.
func (e *TimeoutError) Error() string {
	if e.Timeout == 0 {
		return "the request body did not arrive in time"
	}
	return fmt.Sprintf("the request body did not arrive within %s", e.Timeout)
}

// Limit bounds the body of r, served through w: reading it fails with a
// *TimeoutError once timeout has passed, and with an *http.MaxBytesError
// beyond maxBytes (http.MaxBytesReader). It sets the read deadline of r's
// connection (http.ResponseController), replacing the server's
// ReadTimeout for the body; net/http clears it once the body has been read
// to its end. A request without a body is left as it is: its connection
// is already waiting, in the background, for the client to go away, and a
// deadline there would cancel the request's context. Where the deadline
// cannot be set (a ResponseWriter that does not unwrap to the server's),
// the server's own timeouts apply and still end in a *TimeoutError.
func Limit(w http.ResponseWriter, r *http.Request, timeout time.Duration, maxBytes int64) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}
	set := http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout)) == nil
	if !set {
		timeout = 0
	}
	r.Body = &body{ReadCloser: http.MaxBytesReader(w, r.Body, maxBytes), timeout: timeout}
}

// body is a request body whose timeouts are *TimeoutErrors.
type body struct {
	io.ReadCloser
	timeout time.Duration
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && timedOut(err) {
		err = &TimeoutError{Timeout: b.timeout}
	}
	return n, err
}

// timedOut reports whether err is a read deadline passing.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
