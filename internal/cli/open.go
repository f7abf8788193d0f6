package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"     // registers postgres:
	"github.com/hopperq/hopper/store/sqlitestore" // registers sqlite:
)

// database is what --db names.
type database struct {
	// url is the store URL given, or "sqlite:PATH" for a bare path.
	url string
	// path is the SQLite file as given, or "" for a store of another kind.
	path string
	// schema is the PostgreSQL schema the URL names (hopper_schema, by
	// default "hopper"), or "" for a store of another kind.
	schema string
}

// name is the database for messages: the SQLite file's absolute path, or
// the URL without its password.
func (d database) name() string {
	if d.path == "" {
		return store.Redacted(d.url)
	}
	if abs, err := filepath.Abs(d.path); err == nil {
		return abs
	}
	return d.path
}

// parseDB reads --db: a store URL (sqlite:PATH, postgres://…) or a bare
// path, which means a SQLite file. A value is a URL when it starts with a
// registered scheme and ":" (sqlite:x.db), or with any scheme and "://";
// one that starts with another scheme and ":" is refused as a misspelt
// scheme (sqlit:x.db), since taking it as a file name would quietly create
// a new database ("./sqlit:x.db" names that file); anything else is a path.
// Every URL that cannot work — an unknown scheme (mysql://, postgress://),
// or parameters its store refuses (hopper_schem=, a bad sslmode) — is a
// usage error, found here before anything connects. Errors name s as
// from: "--db" or "$HOPPER_DB".
func parseDB(s, from string) (database, error) {
	if strings.TrimSpace(s) == "" {
		return database{}, usagef("%s must not be empty", from)
	}
	scheme, rest, ok := strings.Cut(s, ":")
	if ok && isScheme(scheme) && !slices.Contains(store.Schemes(), strings.ToLower(scheme)) && !strings.HasPrefix(rest, "//") {
		return database{}, usagef("bad %s %q: unknown scheme %q (registered: %s); for a file of that name, write ./%s",
			from, store.Redacted(s), scheme, strings.Join(store.Schemes(), ", "), s)
	}
	if ok && isScheme(scheme) {
		switch lower := strings.ToLower(scheme); {
		case !slices.Contains(store.Schemes(), lower):
			return database{}, usagef("bad %s %q: unknown scheme %q (registered: %s)",
				from, store.Redacted(s), scheme, strings.Join(store.Schemes(), ", "))
		case lower == pgstore.Scheme || lower == pgstore.SchemeAlt:
			_, opts, err := pgstore.ParseURL(s)
			if err != nil {
				return database{}, usagef("bad %s: %v", from, err)
			}
			return database{url: s, schema: cmp.Or(opts.Schema, pgstore.DefaultSchema)}, nil
		case lower != sqlitestore.Scheme:
			return database{url: s}, nil
		}
		path, _, err := sqlitestore.ParseURL(s)
		if err != nil {
			return database{}, usagef("bad %s: %v", from, err)
		}
		return database{url: s, path: path}, nil
	}
	if strings.Contains(s, "?") {
		return database{}, usagef(`bad %s %q: a file path must not contain "?", which a sqlite: URL reads as the start of its options`, from, s)
	}
	return database{url: sqlitestore.Scheme + ":" + filepath.Clean(s), path: s}, nil
}

// isScheme reports whether s is a URL scheme of at least two characters
// (one letter would be a Windows drive).
func isScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// noDatabaseError is the error of opening, without creating it, a SQLite
// file that does not exist.
type noDatabaseError struct{ path string }

func (e *noDatabaseError) Error() string {
	return fmt.Sprintf("no database at %s (it is created by hopper migrate, enqueue, schedule add, serve or demo; pass --db or set HOPPER_DB to use another)", e.path)
}

// checkDBPath gives a clear error for a SQLite file that cannot work,
// before the store tries.
func checkDBPath(path string, create bool) error {
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("database %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("database %s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("database %s: %s is not a directory", path, dir)
	}
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return &noDatabaseError{path}
		}
	case err != nil:
		return fmt.Errorf("database %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("database %s is a directory, not a file", path)
	}
	return nil
}

// session is an open store and a client on it.
type session struct {
	*hopper.Client
	store store.Store
	db    database
}

// access says what a command does to the database.
type access uint8

const (
	// readOnly commands only read: the store is opened read-only, which
	// never migrates, creates or writes anything (not even SQLite's -wal
	// and -shm files or Hopper's lock directory).
	readOnly access = iota
	// readWrite commands change an existing database (migrating its
	// schema if it is older). Neither they nor readOnly commands create
	// one: a database without Hopper's schema (no SQLite file, a
	// misspelt hopper_schema) is an error, not an empty store.
	readWrite
	// create commands also create the database if it does not exist.
	create
)

// openOpts say how to open the database.
type openOpts struct {
	access access
	// config, if set, adjusts the client's configuration.
	config func(*hopper.Config)
	// kinds, if set, are the built-in kinds to register and their
	// policies (serve's flags); nil: both, with the allow-list of
	// $HOPPER_EXEC_ALLOW.
	kinds *kinds.Options
}

// open opens the --db store and a client on it (not started), with the
// built-in kinds registered. Close it with session.close.
func (a *app) open(ctx context.Context, o openOpts) (*session, error) {
	ko := o.kinds
	if ko == nil {
		env, err := envOptions()
		if err != nil {
			return nil, err
		}
		ko = &env
	}
	ws := hopper.NewWorkers()
	if err := kinds.RegisterWith(ws, *ko); err != nil {
		return nil, usageError{err}
	}
	channels := &channelSource{}
	if err := kinds.RegisterNotify(ws, *ko, channels); err != nil {
		return nil, usageError{err}
	}
	db, err := parseDB(a.db, a.dbFrom())
	if err != nil {
		return nil, err
	}
	if db.path != "" {
		if err := checkDBPath(db.path, o.access == create); err != nil {
			return nil, err
		}
	}
	st, err := store.Open(ctx, db.url, store.OpenOptions{ReadOnly: o.access == readOnly, MustExist: o.access != create})
	if err != nil {
		if errors.Is(err, store.ErrNoSchema) && db.schema != "" {
			return nil, fmt.Errorf("no Hopper schema %q in %s (it is created by hopper migrate, enqueue, schedule add, serve or demo; "+
				"check the URL's hopper_schema, or pass --db or set HOPPER_DB to use another)", db.schema, db.name())
		}
		return nil, fmt.Errorf("open database: %w", err)
	}
	cfg := hopper.Config{
		Store:          st,
		Workers:        ws,
		Logger:         slog.New(slog.DiscardHandler),
		NotifyDeadJobs: true, // delivered by a started client: serve's, demo's
	}
	if o.config != nil {
		o.config(&cfg)
	}
	c, err := hopper.NewClient(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	channels.c = c
	return &session{Client: c, store: st, db: db}, nil
}

// channelSource gives the notification kind its client's channels; the
// client is made after the kind is registered.
type channelSource struct{ c *hopper.Client }

// Channel implements kinds.ChannelSource.
func (s *channelSource) Channel(ctx context.Context, name string) (*hopper.Channel, error) {
	return s.c.Channel(ctx, name)
}

// close stops the client (gracefully until ctx is done) and closes the
// store, which the client does not own.
func (s *session) close(ctx context.Context) error {
	err := s.Stop(ctx)
	return errors.Join(err, s.store.Close())
}

// closeQuick stops and closes, waiting at most 10s for running jobs.
func (s *session) closeQuick() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.close(ctx)
}

// withSession runs fn on a session of a's database and closes it after.
func (a *app) withSession(ctx context.Context, o openOpts, fn func(*session) error) error {
	s, err := a.open(ctx, o)
	if err != nil {
		return err
	}
	defer s.closeQuick()
	return fn(s)
}
