// Package pipenet is for tests only: a net.Listener whose connections are
// net.Pipe pairs, so that an http.Server can run inside a testing/synctest
// bubble. A pipe holds no buffer — a write waits for the other end to
// read — and its deadlines run on the bubble's fake clock, so a test can
// play a client that stops reading and see the server's write deadlines
// fire without waiting for them.
package pipenet

import (
	"net"
	"net/http"
	"sync"
	"testing"
)

// Listener hands out the server ends of the pipes Dial makes. Its zero
// value is not usable: call New.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// New returns a listener with no connection yet.
func New() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Dial connects to the listener and returns the client's end. It waits
// for the server to accept, and fails with net.ErrClosed once the
// listener is closed.
func (l *Listener) Dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	}
}

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener: Accept and Dial fail from then on.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *Listener) Addr() net.Addr { return addr{} }

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipe" }

// Serve serves srv on a new Listener until the test ends (it then closes
// srv and waits for Serve to return), connects to it, and returns the
// client's end of the connection and a channel closed once the server has
// closed its end. It sets srv.ConnState.
func Serve(t testing.TB, srv *http.Server) (net.Conn, <-chan struct{}) {
	t.Helper()
	closed := make(chan struct{})
	var once sync.Once
	srv.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			once.Do(func() { close(closed) })
		}
	}
	ln := New()
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	conn, err := ln.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn, closed
}
