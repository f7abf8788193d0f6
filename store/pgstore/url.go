package pgstore

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The URL schemes of PostgreSQL stores, registered with store.Open when the
// package is imported.
const (
	Scheme    = "postgres"
	SchemeAlt = "postgresql"
)

func init() {
	for _, scheme := range []string{Scheme, SchemeAlt} {
		store.Register(scheme, func(ctx context.Context, url string, o store.OpenOptions) (store.Store, error) {
			s, err := OpenURL(ctx, url, o)
			if err != nil {
				return nil, err // not a typed nil in the interface
			}
			return s, nil
		})
	}
}

// The query parameters of a store URL that are Hopper's, not pgx's: ParseURL
// takes them out before pgx parses the rest.
const (
	paramSchema       = "hopper_schema"        // Options.Schema
	paramPgBouncer    = "hopper_pgbouncer"     // Options.PgBouncer: true or false
	paramMigrate      = "hopper_migrate"       // false: Options.NoMigrate
	paramPollInterval = "hopper_poll_interval" // Options.PollInterval, a Go duration
	paramPoolSize     = "hopper_pool_size"     // Options.PoolSize
	paramVacuum       = "hopper_vacuum"        // false: Options.NoVacuum
)

var hopperParams = []string{paramSchema, paramPgBouncer, paramMigrate, paramPollInterval, paramPoolSize, paramVacuum}

// OpenURL opens the store a "postgres://" or "postgresql://" URL names, with
// o's options (see Open). The URL is a libpq/pgx connection URL; the
// parameters below are Hopper's and are taken out before pgx sees the rest
// (pgx's own, such as sslmode, pool_max_conns or application_name, pass
// through):
//
//	hopper_schema=NAME        the schema of Hopper's tables (default hopper)
//	hopper_pgbouncer=true     behind PgBouncer in transaction mode: no
//	                          prepared statements, no LISTEN (Wake polls)
//	hopper_migrate=false      do not migrate at Open: fail unless the schema
//	                          is this build's version (run Migrate first)
//	hopper_poll_interval=1s   how often Wake fires without notifications
//	hopper_pool_size=10       the pool's connections (pgx's pool_max_conns
//	                          works too)
//	hopper_vacuum=false       never VACUUM the jobs table, even when
//	                          autovacuum is off for it
//
// Any other parameter starting with "hopper_" is an error.
func OpenURL(ctx context.Context, rawURL string, o store.OpenOptions) (*Store, error) {
	conn, opts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.ReadOnly, opts.MustExist, opts.Worker = o.ReadOnly, o.MustExist, o.Worker
	return Open(ctx, conn, opts)
}

// ParseURL splits a store URL into the connection string pgx gets (the URL
// without Hopper's parameters) and the Options those parameters set (see
// OpenURL), and checks that pgx can parse the connection string (its own
// parameters, such as sslmode). It never connects. Errors never show the
// URL's password.
func ParseURL(rawURL string) (connString string, opts Options, err error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", Options{}, fmt.Errorf("pgstore: store URL: cannot parse it (%s)", parseReason(err, rawURL))
	}
	if s := strings.ToLower(u.Scheme); s != Scheme && s != SchemeAlt {
		return "", Options{}, fmt.Errorf("pgstore: store URL %s: want the scheme postgres:// or postgresql://", u.Redacted())
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", Options{}, fmt.Errorf("pgstore: store URL %s: query: %w", u.Redacted(), err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("pgstore: store URL %s: %s", u.Redacted(), fmt.Sprintf(format, args...))
	}
	for k, vs := range q {
		if !strings.HasPrefix(strings.ToLower(k), "hopper_") {
			continue
		}
		v := vs[len(vs)-1]
		switch k {
		case paramSchema:
			if err := checkSchemaName(v); err != nil {
				return "", Options{}, bad("%s: %v", k, err)
			}
			opts.Schema = v
		case paramPgBouncer, paramMigrate, paramVacuum:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return "", Options{}, bad("%s=%q: want true or false", k, v)
			}
			switch k {
			case paramPgBouncer:
				opts.PgBouncer = b
			case paramMigrate:
				opts.NoMigrate = !b
			default:
				opts.NoVacuum = !b
			}
		case paramPollInterval:
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return "", Options{}, bad("%s=%q: want a positive duration such as 500ms or 2s", k, v)
			}
			opts.PollInterval = d
		case paramPoolSize:
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return "", Options{}, bad("%s=%q: want a positive number of connections", k, v)
			}
			opts.PoolSize = n
		default:
			return "", Options{}, bad("unknown parameter %q (Hopper's are %s)", k, strings.Join(hopperParams, ", "))
		}
		q.Del(k)
	}
	u.RawQuery = q.Encode()
	connString = u.String()
	// pgx's own parameters (sslmode, connect_timeout, …): checked here,
	// so that a bad one is the URL's error, found before connecting. The
	// message shows the URL with its password redacted.
	if _, err := pgxpool.ParseConfig(connString); err != nil {
		return "", Options{}, fmt.Errorf("pgstore: store URL: %w", err)
	}
	return connString, opts, nil
}

// parseReason is url.Parse's complaint about rawURL without the URL itself,
// which would show the password.
func parseReason(err error, rawURL string) string {
	msg := err.Error()
	if ue, ok := err.(*url.Error); ok {
		msg = ue.Err.Error()
	}
	return strings.ReplaceAll(msg, rawURL, "…")
}
