package store

import (
	"cmp"
	"context"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"
	"sync"
)

// OpenOptions say how Open opens a store.
type OpenOptions struct {
	// ReadOnly opens the store for inspection: nothing is migrated or
	// created, and every write fails. A read-only store of a database that
	// does not exist yet, or has no schema yet, reads as empty.
	ReadOnly bool
	// MustExist opens only a store that exists: a database without
	// Hopper's schema (for SQLite, no file or an empty one) fails with an
	// error wrapping ErrNoSchema, instead of being created (read-write) or
	// read as empty (ReadOnly). A read-write open still migrates an older
	// schema. Commands that only read or change what exists (hopper jobs,
	// dlq, …) open with it, so that a misspelt name is an error, not an
	// empty store.
	MustExist bool
	// Worker names this process in leases (default: chosen by the store).
	Worker string
}

// Opener opens the store a URL names. Backends register one per URL scheme.
type Opener func(ctx context.Context, url string, o OpenOptions) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes a backend available to Open for URLs of scheme, as
// database/sql drivers register themselves; backends call it from init. It
// panics if scheme is registered twice.
func Register(scheme string, open Opener) {
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("store: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Open opens the store url names, by the backend registered for its scheme:
// "sqlite:PATH" (package sqlitestore) or "postgres://…" (package pgstore),
// say. Import the backend's package (for its side effect, if nothing else)
// to register it.
func Open(ctx context.Context, url string, o OpenOptions) (Store, error) {
	scheme, _, ok := strings.Cut(url, ":")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("store URL %q: no scheme (want, e.g., sqlite:app.db or postgres://host/db)", Redacted(url))
	}
	openersMu.RLock()
	open := openers[strings.ToLower(scheme)]
	openersMu.RUnlock()
	if open == nil {
		registered := cmp.Or(strings.Join(Schemes(), ", "), "none")
		if pkg, ok := backendPackages[strings.ToLower(scheme)]; ok {
			return nil, fmt.Errorf("store URL %q: scheme %q is not registered: import _ %q to register it (registered: %s)",
				Redacted(url), scheme, pkg, registered)
		}
		return nil, fmt.Errorf("store URL %q: unknown scheme %q (registered: %s)", Redacted(url), scheme, registered)
	}
	return open(ctx, url, o)
}

// backendPackages are the packages of this module's backends by the
// schemes they register, for the error of a program that forgot to import
// one.
var backendPackages = map[string]string{
	"sqlite":     "github.com/hopperq/hopper/store/sqlitestore",
	"postgres":   "github.com/hopperq/hopper/store/pgstore",
	"postgresql": "github.com/hopperq/hopper/store/pgstore",
}

// Schemes lists the registered URL schemes, sorted.
func Schemes() []string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	out := make([]string, 0, len(openers))
	for s := range openers {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Redacted returns url with its password, if it has one, replaced by
// "xxxxx", for messages and logs; anything that does not parse as a URL
// with a password comes back unchanged.
func Redacted(url string) string {
	u, err := neturl.Parse(url)
	if err != nil || u.User == nil {
		return url
	}
	if _, ok := u.User.Password(); !ok {
		return url
	}
	return u.Redacted()
}
