package store

import (
	"context"
	"strings"
	"testing"
)

func TestRedacted(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://app:s3cret@db:5432/app?sslmode=require": "postgres://app:xxxxx@db:5432/app?sslmode=require",
		"postgres://app@db/app":                             "postgres://app@db/app",
		"sqlite:/var/lib/hopper.db":                         "sqlite:/var/lib/hopper.db",
		"/tmp/a b.db":                                       "/tmp/a b.db",
	} {
		if got := Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestOpenUnregistered: opening a URL of one of this module's backends
// without importing its package says which package to import; another
// scheme is unknown. No backend is registered in this package's tests.
func TestOpenUnregistered(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"sqlite:app.db":    `scheme "sqlite" is not registered: import _ "github.com/hopperq/hopper/store/sqlitestore" to register it (registered: none)`,
		"postgres://h/d":   `import _ "github.com/hopperq/hopper/store/pgstore"`,
		"PostgreSQL://h/d": `import _ "github.com/hopperq/hopper/store/pgstore"`,
		"mysql://h/d":      `unknown scheme "mysql" (registered: none)`,
	} {
		_, err := Open(context.Background(), url, OpenOptions{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): %v, want an error with %q", url, err, want)
		}
	}
}
