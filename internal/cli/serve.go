package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/metrics"
	"github.com/spf13/cobra"
)

// defaultLogLevel is serve's --log-level: info, not debug, whose line per
// transition (some 150 bytes: 15 MB per 100,000 jobs enqueued) slows a
// busy server down.
const defaultLogLevel = "info"

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, usagef("bad --log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func (a *app) serveCmd() *cobra.Command {
	var (
		workers         int
		queues, level   string
		external        string
		shutdownTimeout time.Duration
		lease, rescue   time.Duration
		outputLimit     int
		hf              serverFlags
		of              offerFlags
	)
	c := &cobra.Command{
		Use:   "serve [--workers N] [--queues q1,q2:LIMIT] [--log-level LEVEL] [--shutdown-timeout D] [--lease D] [--rescue-interval D] [--output-limit BYTES] [--external-kinds K1,K2] [--kinds exec,http] [--exec-allow PATH]... [--exec-user NAME] [--exec-env NAME]... [--http-allow CIDR|HOST]... [--http-proxy-from-env] [--http [ADDR] [--token [NAME=]SCOPE:SECRET]... [--tokens-file FILE] [--read-only] [--insecure-listen] [--allowed-hosts H1,H2] [--public-url URL] [--session-lifetime D]]",
		Short: "Run jobs until interrupted; with --http, serve the API, the dashboard and metrics",
		Long: `Run the jobs of the database with the built-in kinds (exec, http), fire the
recurring schedules, rescue the jobs of servers that died, and clean up old
finished jobs, until SIGINT or SIGTERM. It creates the database if needed
and brings its schema up to date (as hopper migrate does).

--kinds lists the built-in kinds offered (default both): the API refuses
the others, and the workers do not run them. An exec job's command runs
with a clean environment (PATH, HOME, USER, LOGNAME, LANG, LANGUAGE, LC_*,
TZ, TMPDIR, the variables named by --exec-env, then the job's env; never
the server's other variables, such as $` + TokensEnv + `). --exec-allow limits the
programs exec jobs may run, checked at enqueue and when a job runs (default
$` + ExecAllowEnv + `); allowing a shell, env or an interpreter allows every
command. --exec-user runs the commands as another user (serve must run as
root); serving exec over HTTP as root without it logs a warning.

http jobs may not connect to loopback, link-local (cloud metadata),
private, shared, unique-local, multicast and reserved addresses, checked on
the address connected to (after DNS) and on every redirect (at most ` + strconv.Itoa(kinds.DefaultHTTPMaxRedirects) + `);
proxy variables are ignored. --http-allow opens a CIDR prefix, an IP
address, or a host name (whatever it resolves to), checked at enqueue and
when a job runs (default $` + HTTPAllowEnv + `). --http-proxy-from-env honours
HTTP_PROXY, HTTPS_PROXY and NO_PROXY (the proxy's address is checked too).
See docs/security.md.

It logs to stderr at --log-level info by default: the server's own life
(serving, leading, stopping), schedule firings, failed attempts (warn) and
dead jobs (error). --log-level debug adds a line for every transition of
every job (enqueued, started, completed...): a line or two per job, for
following a few jobs, not for a busy server.

With --http ADDR it also serves, on ADDR, the JSON API under /api/v1/
(docs/api.md), the dashboard at /, Prometheus metrics at /metrics
(docs/metrics.md), /healthz (the process is alive) and /readyz (the
database answers and its schema is current). ADDR is HOST:PORT, or :PORT or
PORT for 127.0.0.1; --http alone listens on ` + DefaultHTTPAddr + `. Requests
need a bearer token when tokens are given (--token, --tokens-file or
$` + TokensEnv + `, each NAME=SCOPE:SECRET with scope read, write, exec or
admin; exec enqueues commands); without tokens every request may do
everything, so serve refuses to listen beyond loopback unless told
--insecure-listen. --read-only refuses every change. Requests whose Host
is not localhost, a loopback address, the address reached or one of
--allowed-hosts get 421 (DNS rebinding). Behind a reverse proxy that ends
TLS, --public-url https://NAME says where browsers reach the server: NAME
is allowed, its origin may post to the dashboard, and the session cookie
is Secure. Changes are logged at info with the token's name (msg=audit).
--workers 0 runs no jobs at all — no schedules, no rescues, no cleanup:
a process serving only the API and the dashboard beside other servers.

On the first signal it stops taking jobs and HTTP requests and waits up to
--shutdown-timeout for running jobs; those still running then are cancelled
and go back to waiting without losing an attempt. A second signal stops at
once. A signal that comes while it starts (opening the database) stops it
before it takes any job. Several servers may share one database.`,
		Example: `  hopper serve
  hopper serve --workers 32 --queues default,emails:4 --log-level debug
  hopper serve --http :8080
  HOPPER_TOKENS=ops=admin:$(cat /etc/hopper/admin.token) hopper serve --http 0.0.0.0:8080 --allowed-hosts hopper.example.com
  hopper serve --workers 0 --http :8080 --read-only --external-kinds send_email
  hopper serve --http :8080 --exec-user hopper --exec-allow '/opt/jobs/*' --exec-env AWS_REGION
  hopper serve --http :8080 --kinds http
  hopper serve --http-allow 10.20.0.0/16 --http-allow hooks.internal`,
		Args: cobra.ArbitraryArgs, // the ADDR of "--http ADDR"; see serverFlags.resolve
		RunE: func(cmd *cobra.Command, args []string) error {
			// Signals first: from here on SIGINT and SIGTERM stop the
			// server in order, wherever it is.
			sigs, stop := a.signals()
			defer stop()
			lvl, err := parseLevel(level)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(a.Err, &slog.HandlerOptions{Level: lvl}))
			qs, err := parseQueues(queues)
			if err != nil {
				return err
			}
			addr, err := hf.resolve(cmd.Flags(), args)
			if err != nil {
				return err
			}
			switch {
			case workers < 0 || workers > hopper.MaxConcurrency:
				return usagef("bad --workers %d: must be between 1 and %d (or 0 with --http: no workers)", workers, hopper.MaxConcurrency)
			case workers == 0 && addr == "":
				return usagef("--workers 0 runs no jobs: give --http to serve only the API and the dashboard")
			case workers == 0 && qs != nil:
				return usagef("--queues applies to workers, and --workers 0 runs none")
			}
			if shutdownTimeout < 0 {
				return usagef("bad --shutdown-timeout %s: must not be negative", shutdownTimeout)
			}
			if lease <= 0 { // the library's 0 is its default
				return usagef("bad --lease %s: must be positive (leave it out for the default, %s)", lease, hopper.DefaultLeaseDuration)
			}
			if fe := (*hopper.FieldError)(nil); errors.As((&hopper.Config{LeaseDuration: lease}).Validate(), &fe) {
				return usagef("bad --lease %s: %s", lease, fe.Reason)
			}
			if rescue <= 0 {
				return usagef("bad --rescue-interval %s: must be positive", rescue)
			}
			if outputLimit < 0 {
				return usagef("bad --output-limit %d: must not be negative (0 keeps no output)", outputLimit)
			}
			ext, err := parseExternalKinds(external)
			if err != nil {
				return err
			}
			ko, err := of.options(cmd.Flags())
			if err != nil {
				return err
			}
			o := serveOpts{workers: workers, queues: qs, external: ext, kinds: ko, shutdownTimeout: shutdownTimeout, lease: lease, rescue: rescue,
				outputLimit: cmp.Or(outputLimit, -1)} // the library's 0 is its default
			if addr != "" {
				if o.auth, err = hf.auth(os.Getenv(TokensEnv), log); err != nil {
					return err
				}
				if o.ln, err = listenHTTP(addr, o.auth, hf.insecure); err != nil {
					return err
				}
				o.insecure, o.allowedHosts, o.public = hf.insecure, hf.allowedHosts, hf.public
			}
			return a.serve(cmd.Context(), sigs, log, o)
		},
	}
	c.Flags().IntVar(&workers, "workers", 10, fmt.Sprintf("jobs run at once (1 to %d; 0 with --http: none, only the API and dashboard)", hopper.MaxConcurrency))
	c.Flags().StringVar(&queues, "queues", "", "work only these queues, each with an optional limit of jobs at once (default: every queue)")
	c.Flags().StringVar(&level, "log-level", defaultLogLevel, "debug (also every transition of every job), info (the server's life, schedule firings, failures), warn (failed attempts and dead jobs) or error (dead jobs)")
	c.Flags().DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long running jobs may finish")
	c.Flags().DurationVar(&lease, "lease", hopper.DefaultLeaseDuration, "how long a running job stays this server's without a renewal (renewed every third of it); a job whose server hung or died runs again once it expires (on SQLite, one whose server died runs again at once)")
	c.Flags().DurationVar(&rescue, "rescue-interval", hopper.DefaultRescueInterval, "how often expired leases are looked for (by every server)")
	c.Flags().IntVar(&outputLimit, "output-limit", hopper.DefaultOutputLimit, "bytes of each attempt's stdout, and of its stderr, kept with the attempt (hopper jobs output); 0: none")
	c.Flags().StringVar(&external, "external-kinds", "", "kinds other programs run on this database, which the API may enqueue and schedule (comma-separated)")
	hf.register(c.Flags())
	of.register(c.Flags())
	return c
}

// serveOpts are what serve runs.
type serveOpts struct {
	workers         int // 0: none, the client is not started
	queues          map[string]hopper.QueueConfig
	external        []string
	kinds           kinds.Options // the built-in kinds offered, and their policies
	shutdownTimeout time.Duration
	lease, rescue   time.Duration // Config.LeaseDuration, Config.RescueInterval (0: the defaults)
	outputLimit     int           // Config.OutputLimit (0: the default; negative: none kept)
	// ln, if set, is where the HTTP server listens, with auth, answering
	// to the hosts of --allowed-hosts besides loopback.
	ln           net.Listener
	auth         *httpauth.Auth
	insecure     bool
	allowedHosts []string
	public       *url.URL // --public-url
}

// parseExternalKinds reads --external-kinds.
func parseExternalKinds(s string) ([]string, error) {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if err := job.CheckName("kind", k); err != nil {
			return nil, usagef("bad --external-kinds: %v", err)
		}
		out = append(out, k)
	}
	return out, nil
}

func (a *app) serve(ctx context.Context, sigs <-chan os.Signal, log *slog.Logger, o serveOpts) error {
	if o.ln != nil {
		defer o.ln.Close() // closed by the server once it serves; here if it never does
	}
	var m *metrics.Metrics
	if o.ln != nil {
		m = metrics.New(metrics.Options{NoPool: o.workers == 0})
	}
	// Starting: a signal cancels the opening of the store, and the server
	// then stops without taking a job.
	startCtx, cancelStart := context.WithCancel(ctx)
	var early os.Signal
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case early = <-sigs:
			cancelStart()
		case <-startCtx.Done():
		}
	}()
	s, err := a.open(startCtx, openOpts{access: create, kinds: &o.kinds, config: func(c *hopper.Config) {
		c.Concurrency, c.Queues, c.Logger, c.ExternalKinds = max(o.workers, 1), o.queues, log, o.external
		c.LeaseDuration, c.RescueInterval = o.lease, o.rescue
		c.OutputLimit = o.outputLimit
		if m != nil {
			c.OnEvent, c.OnStoreCall, c.Remote.OnRefused = m.OnEvent, m.OnStoreCall, m.OnRemoteRefused
		}
	}})
	cancelStart()
	<-watched
	if early == nil {
		// A signal that came while the store opened, if the watcher saw
		// the end of the opening first.
		select {
		case early = <-sigs:
		default:
		}
	}
	if early != nil {
		if s != nil {
			s.closeQuick()
		}
		log.Info("interrupted while starting: stopped before taking any job", "signal", early.String())
		return nil
	}
	if err != nil {
		return err
	}
	if o.workers > 0 {
		if err := s.Start(); err != nil {
			s.closeQuick()
			return err
		}
	}
	var web *webServer
	failed := make(chan error, 1)
	if o.ln != nil {
		m.Attach(s.Client)
		h, dash, err := httpHandler(s.Client, m, o.auth, o.allowedHosts, o.public, log)
		if err != nil {
			s.closeQuick()
			return err
		}
		web = startWeb(o.ln, h, dash, log, failed)
	}
	a.logServing(log, s, o)
	if o.ln != nil && o.workers > 0 && o.kinds.ExecAsRoot() {
		log.Warn(execRootWarning(o.kinds))
	}

	var why string
	var serveErr error
	select {
	case sig := <-sigs:
		why = sig.String()
	case <-ctx.Done():
		why = "context done"
	case serveErr = <-failed:
		why = "the HTTP server failed"
		log.Error("HTTP server failed", "error", serveErr)
	}
	log.Info("shutting down: waiting for running jobs (signal again to stop at once)", "reason", why, "timeout", o.shutdownTimeout)
	stopCtx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal: stopping at once; running jobs go back to waiting", "signal", sig.String())
			cancel()
		case <-stopCtx.Done():
		}
	}()
	start := time.Now()
	if web != nil {
		web.shutdown(stopCtx)
	}
	err = s.close(stopCtx)
	if errors.Is(stopCtx.Err(), context.DeadlineExceeded) {
		log.Warn("shutdown timeout: running jobs were cancelled and went back to waiting")
	}
	log.Info("stopped", "took", time.Since(start).Round(time.Millisecond))
	if serveErr != nil {
		return errors.Join(fmt.Errorf("HTTP server: %w", serveErr), err)
	}
	return err
}

// logServing writes the line that says the server runs, and how.
func (a *app) logServing(log *slog.Logger, s *session, o serveOpts) {
	attrs := []any{"db", s.db.name(), "workers", o.workers}
	if o.workers > 0 {
		var qnames []string
		for q, c := range o.queues {
			if c.MaxWorkers > 0 {
				q = fmt.Sprintf("%s:%d", q, c.MaxWorkers)
			}
			qnames = append(qnames, q)
		}
		slices.Sort(qnames)
		if qnames == nil {
			qnames = []string{"(all)"}
		}
		attrs = append(attrs, "queues", strings.Join(qnames, ","), "lease", o.lease, "rescue_interval", o.rescue)
	}
	attrs = append(attrs, offerAttrs(o.kinds)...)
	if o.ln != nil {
		auth := "tokens"
		switch {
		case o.auth.Open() && o.insecure:
			auth = "none (--insecure-listen)"
		case o.auth.Open():
			auth = "none (loopback only)"
		}
		attrs = append(attrs, "http", "http://"+o.ln.Addr().String(), "auth", auth, "read_only", o.auth.ReadOnly)
		if len(o.allowedHosts) > 0 {
			attrs = append(attrs, "allowed_hosts", strings.Join(o.allowedHosts, ","))
		}
	}
	attrs = append(attrs, "worker_id", s.WorkerID(), "pid", os.Getpid())
	log.Info("hopper serving", attrs...)
}
