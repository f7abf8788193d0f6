package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/httpapi"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/metrics"
	"github.com/spf13/pflag"
)

// DefaultHTTPAddr is where serve --http listens when given no address:
// loopback only.
const DefaultHTTPAddr = "127.0.0.1:8080"

// TokensEnv names the environment variable holding API tokens, as
// [NAME=]SCOPE:SECRET items separated by commas or newlines. Only serve
// --http reads it: without --http it is not read, nor checked.
const TokensEnv = "HOPPER_TOKENS"

// serverFlags are serve's flags for its HTTP server.
type serverFlags struct {
	addr            string
	tokens          []string
	tokensFile      string
	readOnly        bool
	insecure        bool
	allowedHosts    []string
	sessionLifetime time.Duration
	publicURL       string
	// public is --public-url parsed by resolve (nil without it).
	public *url.URL
}

// maxSessionLifetime bounds --session-lifetime.
const maxSessionLifetime = 30 * 24 * time.Hour

func (f *serverFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve the API, the dashboard, /metrics, /healthz and /readyz on ADDR: HOST:PORT, or :PORT or PORT for 127.0.0.1 (--http alone: "+DefaultHTTPAddr+")")
	fs.Lookup("http").NoOptDefVal = DefaultHTTPAddr
	fs.StringArrayVar(&f.tokens, "token", nil, "an HTTP token [NAME=]SCOPE:SECRET, scope read, write, exec or admin; NAME shows in the logs (repeatable; also $"+TokensEnv+" and --tokens-file)")
	fs.StringVar(&f.tokensFile, "tokens-file", "", "read HTTP tokens from a file: one [NAME=]SCOPE:SECRET per line, # comments (keep it unreadable to others: chmod 600)")
	fs.BoolVar(&f.readOnly, "read-only", false, "the HTTP API and dashboard change nothing, whatever the token")
	fs.BoolVar(&f.insecure, "insecure-listen", false, "allow --http on an address beyond loopback without tokens (something in front must authenticate)")
	fs.StringSliceVar(&f.allowedHosts, "allowed-hosts", nil, "host names (and *.example.com, IP addresses) the HTTP server answers to besides localhost, loopback addresses and the address it was reached at; other Host headers get 421 (DNS rebinding)")
	fs.DurationVar(&f.sessionLifetime, "session-lifetime", httpauth.DefaultSessionLifetime, "how long a dashboard sign-in lasts")
	fs.StringVar(&f.publicURL, "public-url", "", "the URL browsers reach the server at through a reverse proxy, such as https://hopper.example.com: its host is allowed (as --allowed-hosts), its origin may post to the dashboard, and with https the session cookie is Secure")
}

// resolve checks the HTTP flags given with serve's positional args, which
// may hold the address of "--http ADDR" (pflag reads a bare --http as its
// default and ADDR as an argument). It returns the address to listen on, or
// "" for no HTTP server.
func (f *serverFlags) resolve(fs *pflag.FlagSet, args []string) (string, error) {
	given := fs.Changed("http")
	if len(args) > 0 {
		if !given || f.addr != DefaultHTTPAddr || len(args) > 1 {
			return "", usagef("serve takes no arguments, got %q (the address of --http goes right after it, or as --http=ADDR)", args[0])
		}
		f.addr = args[0]
	}
	if !given {
		for _, name := range []string{"token", "tokens-file", "read-only", "insecure-listen", "allowed-hosts", "session-lifetime", "public-url"} {
			if fs.Changed(name) {
				return "", usagef("--%s applies to the HTTP server: give --http too", name)
			}
		}
		return "", nil
	}
	if f.sessionLifetime < time.Minute || f.sessionLifetime > maxSessionLifetime {
		return "", usagef("bad --session-lifetime %s: want 1m to %s", f.sessionLifetime, maxSessionLifetime)
	}
	if f.publicURL != "" {
		u, err := parsePublicURL(f.publicURL)
		if err != nil {
			return "", usagef("bad --public-url %q: %v", f.publicURL, err)
		}
		f.public = u
		f.allowedHosts = append(f.allowedHosts, u.Hostname())
	}
	if _, err := httpauth.NewHostCheck(httpauth.HostOptions{Allowed: f.allowedHosts}); err != nil {
		return "", usagef("bad --allowed-hosts: %v", err)
	}
	return httpAddr(f.addr)
}

// parsePublicURL reads --public-url: an http or https URL of a host, with
// no path (the dashboard is served at the root), query or user.
func parsePublicURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	switch {
	case err != nil:
		return nil, errors.New("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, errors.New("want an http or https URL, such as https://hopper.example.com")
	case u.Hostname() == "":
		return nil, errors.New("no host")
	case u.User != nil, u.RawQuery != "", u.Fragment != "", u.Path != "" && u.Path != "/":
		return nil, errors.New("want the scheme and host (and port) alone: the server is served at the root")
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// httpAddr reads an --http address: HOST:PORT, :PORT or PORT (the last two
// on 127.0.0.1).
func httpAddr(s string) (string, error) {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseUint(s, 10, 16); err == nil {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", usagef("bad --http %q: want HOST:PORT, :PORT or PORT, such as %s", s, DefaultHTTPAddr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", usagef("bad --http %q: port %q is not a number from 0 to 65535", s, port)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// auth builds the tokens of the flags, the file and env (the value of
// $HOPPER_TOKENS). Unnamed tokens are named after where they were given:
// --token#N, FILE:LINE, $HOPPER_TOKENS#N. A tokens file others may read
// gets a warning on log.
func (f *serverFlags) auth(env string, log *slog.Logger) (*httpauth.Auth, error) {
	a := &httpauth.Auth{ReadOnly: f.readOnly, SessionLifetime: f.sessionLifetime}
	if err := a.ParseTokensFrom("--token", strings.Join(f.tokens, "\n")); err != nil {
		return nil, usagef("bad %v", err)
	}
	if f.tokensFile != "" {
		if err := a.LoadFile(f.tokensFile); err != nil {
			return nil, usageError{err}
		}
		if fi, err := os.Stat(f.tokensFile); err == nil && fi.Mode().Perm()&0o044 != 0 {
			log.Warn("the tokens file is readable by other users: chmod 600 it (or 640 for a group you trust)",
				"file", f.tokensFile, "mode", fi.Mode().Perm().String())
		}
	}
	if err := a.ParseTokensFrom("$"+TokensEnv, env); err != nil {
		return nil, usagef("bad %v", err)
	}
	return a, nil
}

// listenHTTP listens on addr. Without tokens it refuses an address beyond
// loopback — anyone who can reach it could enqueue and delete jobs —
// unless insecure.
func listenHTTP(addr string, auth *httpauth.Auth, insecure bool) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	if auth.Open() && !insecure && !loopback(ln.Addr()) {
		ln.Close()
		return nil, usagef("refusing --http %s without tokens: it is reachable beyond this machine, and anyone who can reach it could enqueue, cancel and delete jobs. "+
			"Give tokens (--token NAME=SCOPE:SECRET, --tokens-file FILE or $%s), listen on 127.0.0.1, or pass --insecure-listen if something in front authenticates", addr, TokensEnv)
	}
	return ln, nil
}

func loopback(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// httpHandler routes the HTTP server of serve: the API under /api/v1/,
// the external checks' ping routes under /ping/ (no token: the ping ID is
// the secret), the metrics, the health checks, and the dashboard at /, all behind the
// Host check (but for /healthz and /readyz, which orchestrators probe by
// names of their own and which tell nothing). Failures of auth and of the
// Host check go to log and to the metrics. It also returns the dashboard,
// for shutdown to close.
//
// public, if not nil, is the URL browsers reach the server at (--public-url):
// its origin may post to the dashboard (a proxy may send another Host), and
// over https the session cookie is Secure (the proxy ends TLS, so the
// requests that reach the server do not show it).
func httpHandler(c *hopper.Client, m *metrics.Metrics, auth *httpauth.Auth, allowedHosts []string, public *url.URL, log *slog.Logger) (http.Handler, io.Closer, error) {
	auth.Logger, auth.OnFailure = log, m.AuthFailure
	hosts, err := httpauth.NewHostCheck(httpauth.HostOptions{
		Allowed: allowedHosts, Exempt: []string{"/healthz", "/readyz"},
		Deny: httpapi.HostDenied, Logger: log, OnFailure: m.AuthFailure, SecretPaths: []string{httpapi.PingPrefix + "/"},
	})
	if err != nil {
		return nil, nil, usagef("bad --allowed-hosts: %v", err)
	}
	mux := http.NewServeMux()
	api := httpapi.New(c, httpapi.Options{Auth: auth, Logger: log})
	mux.Handle(httpapi.Prefix+"/", api)
	mux.Handle(httpapi.Prefix, api) // the API's JSON 404, not the mux's redirect to /api/v1/
	mux.Handle(httpapi.PingPrefix+"/", httpapi.NewPing(c, httpapi.PingOptions{Logger: log}))
	mux.Handle("/metrics", httpapi.GetOnly(httpapi.Protect(auth, httpauth.Read, m.Handler())))
	mux.Handle("/healthz", httpapi.GetOnly(httpapi.Health()))
	mux.Handle("/readyz", httpapi.GetOnly(httpapi.Ready(c, httpapi.HealthOptions{Logger: log})))
	do := dashboard.Options{Auth: auth, Logger: log}
	if public != nil {
		do.TrustedOrigins, do.SecureCookie = []string{public.String()}, public.Scheme == "https"
	}
	dash := dashboard.New(c, do)
	mux.Handle("/", dash)
	return hosts.Handler(mux), dash.(io.Closer), nil
}

// webServer is serve's HTTP server.
type webServer struct {
	srv *http.Server
	// cancelRequests cancels the context of every request, so that the
	// long-lived ones (the dashboard's live updates) end at shutdown.
	cancelRequests context.CancelFunc
	// dash is the dashboard: shutdown closes it first, stopping a bulk
	// action between its batches and ending the live updates.
	dash io.Closer
	done chan struct{}
}

// The timeouts of serve's HTTP server: no client holds a connection, a
// goroutine or a response's buffers longer than these by sending or
// reading slowly (docs/security.md#resource-bounds).
const (
	// httpReadHeaderTimeout bounds the time to send a request's headers.
	httpReadHeaderTimeout = 10 * time.Second
	// httpReadTimeout bounds a request from its first byte to the end of
	// its body. The API and the dashboard give a body less
	// (Options.BodyTimeout, 30s, with a 408); this is the bound of the
	// routes that read none (/metrics, /healthz, /readyz), whose unread
	// body the server discards before it answers.
	httpReadTimeout = time.Minute
	// httpWriteTimeout bounds the time from the end of a request's headers
	// to the end of its response: a client that does not read is cut off.
	// The dashboard's live stream extends its own deadline at each write.
	httpWriteTimeout = time.Minute
	// httpIdleTimeout closes a kept-alive connection with no request.
	httpIdleTimeout = 2 * time.Minute
)

// newHTTPServer returns serve's HTTP server of h, with its timeouts;
// requests' contexts derive from base.
func newHTTPServer(h http.Handler, log *slog.Logger, base context.Context) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       httpReadTimeout,
		WriteTimeout:      httpWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return base },
	}
}

// startWeb serves h on ln until shutdown; if serving fails, the error is
// sent on failed. Timeouts keep slow or idle clients from holding
// connections forever.
func startWeb(ln net.Listener, h http.Handler, dash io.Closer, log *slog.Logger, failed chan<- error) *webServer {
	base, cancel := context.WithCancel(context.Background())
	w := &webServer{
		srv:            newHTTPServer(h, log, base),
		cancelRequests: cancel,
		dash:           dash,
		done:           make(chan struct{}),
	}
	go func() {
		defer close(w.done)
		if err := w.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			failed <- err
		}
	}()
	return w
}

// httpGrace is how long requests in flight may finish at shutdown before
// the contexts of those still running are cancelled (the dashboard's live
// updates never finish by themselves).
const httpGrace = time.Second

// shutdown closes the dashboard (a bulk action stops between batches),
// stops accepting requests, lets those in flight finish for httpGrace,
// then cancels the requests' contexts and waits for them until ctx is done
// (5s at most); connections still open then are closed. It returns once
// the server's goroutine has ended.
func (w *webServer) shutdown(ctx context.Context) {
	defer func() { <-w.done }()
	defer w.cancelRequests()
	w.dash.Close()
	grace, cancel := context.WithTimeout(ctx, httpGrace)
	defer cancel()
	if w.srv.Shutdown(grace) == nil {
		return
	}
	w.cancelRequests()
	rest, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	if w.srv.Shutdown(rest) != nil {
		w.srv.Close()
	}
}
