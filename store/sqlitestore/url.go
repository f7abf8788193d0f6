package sqlitestore

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/hopperq/hopper/store"
)

// Scheme is the URL scheme of SQLite stores, registered with store.Open
// when the package is imported.
const Scheme = "sqlite"

func init() {
	store.Register(Scheme, func(ctx context.Context, url string, o store.OpenOptions) (store.Store, error) {
		s, err := OpenURL(ctx, url, o)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return s, nil
	})
}

// OpenURL opens the store a "sqlite:" URL names, with o's options (see
// Open). The forms are
//
//	sqlite:hopper.db                 a path relative to the working directory
//	sqlite:/var/lib/hopper/hopper.db an absolute path
//	sqlite:///var/lib/hopper/hopper.db
//	sqlite://data/hopper.db          "//" before a path is dropped: no host
//
// optionally followed by ?durability=full (the default) or
// ?durability=normal (Options.Durability). The path is taken as written,
// up to the first '?' (no %-decoding); other query parameters are errors.
func OpenURL(ctx context.Context, rawURL string, o store.OpenOptions) (*Store, error) {
	path, opts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.ReadOnly, opts.MustExist, opts.Worker = o.ReadOnly, o.MustExist, o.Worker
	return Open(ctx, path, opts)
}

// ParseURL returns the path and the options a "sqlite:" URL names (see
// OpenURL).
func ParseURL(rawURL string) (path string, opts Options, err error) {
	scheme, rest, ok := strings.Cut(rawURL, ":")
	if !ok || !strings.EqualFold(scheme, Scheme) {
		return "", Options{}, fmt.Errorf("sqlitestore: URL %q: want a URL of the form %s:PATH", rawURL, Scheme)
	}
	path, query, _ := strings.Cut(rest, "?")
	path = strings.TrimPrefix(path, "//")
	if path == "" {
		return "", Options{}, fmt.Errorf("sqlitestore: URL %q: no file path (want, e.g., sqlite:hopper.db or sqlite:///var/lib/hopper.db)", rawURL)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", Options{}, fmt.Errorf("sqlitestore: URL %q: query: %w", rawURL, err)
	}
	for k, vs := range q {
		if k != "durability" {
			return "", Options{}, fmt.Errorf("sqlitestore: URL %q: unknown parameter %q (known: durability)", rawURL, k)
		}
		switch v := vs[len(vs)-1]; v {
		case "full":
			opts.Durability = DurabilityFull
		case "normal":
			opts.Durability = DurabilityNormal
		default:
			return "", Options{}, fmt.Errorf("sqlitestore: URL %q: durability %q: want full or normal", rawURL, v)
		}
	}
	return path, opts, nil
}
