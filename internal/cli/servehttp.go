package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
// SCOPE:SECRET items separated by commas or newlines.
const TokensEnv = "HOPPER_TOKENS"

// serverFlags are serve's flags for its HTTP server.
type serverFlags struct {
	addr       string
	tokens     []string
	tokensFile string
	readOnly   bool
	insecure   bool
}

func (f *serverFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "serve the API, the dashboard, /metrics, /healthz and /readyz on ADDR: HOST:PORT, or :PORT or PORT for 127.0.0.1 (--http alone: "+DefaultHTTPAddr+")")
	fs.Lookup("http").NoOptDefVal = DefaultHTTPAddr
	fs.StringArrayVar(&f.tokens, "token", nil, "an HTTP token SCOPE:SECRET, scope read, write or admin (repeatable; also $"+TokensEnv+" and --tokens-file)")
	fs.StringVar(&f.tokensFile, "tokens-file", "", "read HTTP tokens from a file: one SCOPE:SECRET per line, # comments")
	fs.BoolVar(&f.readOnly, "read-only", false, "the HTTP API and dashboard change nothing, whatever the token")
	fs.BoolVar(&f.insecure, "insecure-listen", false, "allow --http on an address beyond loopback without tokens (something in front must authenticate)")
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
		for _, name := range []string{"token", "tokens-file", "read-only", "insecure-listen"} {
			if fs.Changed(name) {
				return "", usagef("--%s applies to the HTTP server: give --http too", name)
			}
		}
		return "", nil
	}
	return httpAddr(f.addr)
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
// $HOPPER_TOKENS).
func (f *serverFlags) auth(env string) (*httpauth.Auth, error) {
	a := &httpauth.Auth{ReadOnly: f.readOnly}
	for i, t := range f.tokens {
		if err := a.ParseTokens(t); err != nil {
			return nil, usagef("bad --token #%d: %v", i+1, strings.TrimPrefix(err.Error(), "token #1: "))
		}
	}
	if f.tokensFile != "" {
		if err := a.LoadFile(f.tokensFile); err != nil {
			return nil, usageError{err}
		}
	}
	if err := a.ParseTokens(env); err != nil {
		return nil, usagef("bad $%s: %v", TokensEnv, err)
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
			"Give tokens (--token SCOPE:SECRET, --tokens-file FILE or $%s), listen on 127.0.0.1, or pass --insecure-listen if something in front authenticates", addr, TokensEnv)
	}
	return ln, nil
}

func loopback(a net.Addr) bool {
	ap, err := netip.ParseAddrPort(a.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// httpHandler routes the HTTP server of serve: the API under /api/v1/, the
// metrics, the health checks, and the dashboard at /.
func httpHandler(c *hopper.Client, m *metrics.Metrics, auth *httpauth.Auth, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(httpapi.Prefix+"/", httpapi.New(c, httpapi.Options{Auth: auth, Logger: log}))
	mux.Handle("/metrics", httpapi.GetOnly(httpapi.Protect(auth, httpauth.Read, m.Handler())))
	mux.Handle("/healthz", httpapi.GetOnly(httpapi.Health()))
	mux.Handle("/readyz", httpapi.GetOnly(httpapi.Ready(c, httpapi.HealthOptions{Logger: log})))
	mux.Handle("/", dashboard.New(c, dashboard.Options{Auth: auth, Logger: log}))
	return mux
}

// webServer is serve's HTTP server.
type webServer struct {
	srv *http.Server
	// cancelRequests cancels the context of every request, so that the
	// long-lived ones (the dashboard's live updates) end at shutdown.
	cancelRequests context.CancelFunc
	done           chan struct{}
}

// startWeb serves h on ln until shutdown; if serving fails, the error is
// sent on failed. Timeouts keep slow or idle clients from holding
// connections forever.
func startWeb(ln net.Listener, h http.Handler, log *slog.Logger, failed chan<- error) *webServer {
	base, cancel := context.WithCancel(context.Background())
	w := &webServer{
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       time.Minute,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
			BaseContext:       func(net.Listener) context.Context { return base },
		},
		cancelRequests: cancel,
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

// shutdown stops accepting requests, lets those in flight finish for
// httpGrace, then cancels the requests' contexts and waits for them until
// ctx is done (5s at most); connections still open then are closed. It
// returns once the server's goroutine has ended.
func (w *webServer) shutdown(ctx context.Context) {
	defer func() { <-w.done }()
	defer w.cancelRequests()
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
