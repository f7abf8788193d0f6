package browser

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hopperq/hopper/dashboard"
)

// switchboard is a TCP proxy in front of a server, at an address of its
// own, that a test can freeze (connections kept, no byte passed: a hung
// server, or a network that drops packets), cut (every connection closed
// and new ones refused: a dead server) and restore.
type switchboard struct {
	t       *testing.T
	addr    string // host:port, the same across cuts
	backend string
	gate    sync.RWMutex // held for writing while frozen
	frozen  bool         // by the test's goroutine only

	mu    sync.Mutex
	ln    net.Listener // nil while cut
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newSwitchboard starts a proxy to backend (host:port).
func newSwitchboard(t *testing.T, backend string) *switchboard {
	s := &switchboard{t: t, backend: backend, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.serve(ln)
	t.Cleanup(func() {
		s.cut()
		s.thaw() // the pipes waiting at the gate find their connections closed
		s.wg.Wait()
	})
	return s
}

func (s *switchboard) serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", s.backend)
			if err != nil {
				c.Close()
				continue
			}
			if !s.track(c, b) {
				return
			}
			s.wg.Add(2)
			go s.pipe(c, b)
			go s.pipe(b, c)
		}
	}()
}

// track registers a connection pair; false if the switchboard was cut
// meanwhile (they are closed).
func (s *switchboard) track(cs ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		s.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from src to dst, chunk by chunk, each through the gate.
func (s *switchboard) pipe(dst, src net.Conn) {
	defer s.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			s.gate.RLock()
			_, werr := dst.Write(buf[:n])
			s.gate.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// freeze stops every byte, both ways, until thaw.
func (s *switchboard) freeze() {
	if !s.frozen {
		s.gate.Lock()
		s.frozen = true
	}
}

func (s *switchboard) thaw() {
	if s.frozen {
		s.frozen = false
		s.gate.Unlock()
	}
}

// cut closes the listener and every connection.
func (s *switchboard) cut() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}

// restore listens again, at the same address.
func (s *switchboard) restore() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("listen again on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// browseLiveReconnect: when the server stops answering — hung (its
// connections stay open, silent) or dead (they close, and new ones are
// refused) — the page says "disconnected since …" within 5 seconds, and
// when it is back the page reconnects by itself and catches up, without a
// reload.
func browseLiveReconnect(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	backend, err := url.Parse(serve(t, e))
	if err != nil {
		t.Fatal(err)
	}
	sb := newSwitchboard(t, backend.Host)
	run(t, ctx, "open the jobs", chromedp.Navigate("http://"+sb.addr+"/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")),
		chromedp.Evaluate[chromedp.Void](marker))
	waitFor(t, ctx, "the live stream", `document.getElementById("live").classList.contains("on")`)
	// The page's own clock notes when the indicator changes (the system's
	// clock, as the test's).
	run(t, ctx, "watch the indicator", chromedp.Evaluate[chromedp.Void](`(function () {
		var dot = document.getElementById("live");
		window.__downAt = 0;
		new MutationObserver(function () {
			if (dot.classList.contains("down") && !window.__downAt) window.__downAt = Date.now();
		}).observe(dot, { attributes: true, childList: true, characterData: true, subtree: true });
	})()`))

	down := func(how string, stop func()) {
		t.Helper()
		run(t, ctx, "reset", chromedp.Evaluate[chromedp.Void](`window.__downAt = 0`))
		at := time.Now()
		stop()
		waitFor(t, ctx, "the indicator, after the server "+how, `window.__downAt > 0`)
		downAt, err := chromedp.Run(ctx, chromedp.Evaluate[int64](`window.__downAt`))
		if err != nil {
			t.Fatal(err)
		}
		if took := time.UnixMilli(downAt).Sub(at); took > 5*time.Second {
			t.Errorf("server %s: the page said so after %s, want within 5s", how, took.Round(time.Millisecond))
		}
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("live").textContent`))
		if err != nil || !strings.HasPrefix(shown, "disconnected since ") {
			t.Errorf("server %s: the indicator says %q (%v), want disconnected since …", how, shown, err)
		}
	}
	back := func(how string, start func()) {
		t.Helper()
		start()
		waitFor(t, ctx, "the page to reconnect after the server "+how,
			`document.getElementById("live").classList.contains("on") && document.getElementById("live").textContent === "live"`)
	}

	down("hung", sb.freeze)
	back("hung", sb.thaw)

	down("died", sb.cut)
	id := e.enqueue("ok", nil) // while the page cannot hear of it
	back("died", sb.restore)
	run(t, ctx, "the page catches up", chromedp.WaitVisible(chromedp.ID("job-"+strconv.FormatInt(int64(id), 10))))
	if noReload, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__hopperNoReload === true`)); !noReload {
		t.Errorf("the page was reloaded")
	}
}
