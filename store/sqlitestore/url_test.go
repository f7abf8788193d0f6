package sqlitestore_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url, path string
		dur       sqlitestore.Durability
		err       string // "" means valid
	}{
		{"sqlite:hopper.db", "hopper.db", sqlitestore.DurabilityFull, ""},
		{"sqlite:data/hopper.db", "data/hopper.db", sqlitestore.DurabilityFull, ""},
		{"sqlite:/var/lib/hopper.db", "/var/lib/hopper.db", sqlitestore.DurabilityFull, ""},
		{"sqlite:///var/lib/hopper.db", "/var/lib/hopper.db", sqlitestore.DurabilityFull, ""},
		{"sqlite://data/hopper.db", "data/hopper.db", sqlitestore.DurabilityFull, ""},
		{"SQLite:hopper.db?durability=normal", "hopper.db", sqlitestore.DurabilityNormal, ""},
		{"sqlite:///a b.db?durability=full", "/a b.db", sqlitestore.DurabilityFull, ""},
		{"sqlite:", "", 0, "no file path"},
		{"sqlite://", "", 0, "no file path"},
		{"sqlite:x.db?durability=fast", "", 0, `durability "fast"`},
		{"sqlite:x.db?journal=wal", "", 0, `unknown parameter "journal"`},
		{"postgres://host/db", "", 0, "of the form sqlite:PATH"},
		{"hopper.db", "", 0, "of the form sqlite:PATH"},
	} {
		path, opts, err := sqlitestore.ParseURL(c.url)
		switch {
		case c.err == "" && (err != nil || path != c.path || opts.Durability != c.dur):
			t.Errorf("ParseURL(%q) = %q, %v, %v; want %q, %v", c.url, path, opts.Durability, err, c.path, c.dur)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseURL(%q): got error %v, want one saying %q", c.url, err, c.err)
		}
	}
}

// TestStoreOpen: importing the package registers the sqlite scheme with
// store.Open, which passes the options on.
func TestStoreOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hopper.db")
	ro, err := store.Open(t.Context(), "sqlite://"+path, store.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only store.Open of a missing file: %v", err)
	}
	if _, err := ro.Enqueue(t.Context(), store.EnqueueParams{Now: t0, Jobs: nil}); !errors.Is(err, sqlitestore.ErrReadOnly) {
		t.Errorf("Enqueue on a read-only store: %v, want ErrReadOnly", err)
	}
	ro.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("read-only store.Open created the file: %v", err)
	}
	s, err := store.Open(t.Context(), "sqlite:"+path+"?durability=normal", store.OpenOptions{Worker: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if id, ok := s.(store.Identity); !ok || id.WorkerID() != "w-1" {
		t.Errorf("store.Open: worker %v, want w-1", s)
	}
	enqueue(t, s, newJob(t, "k"))
	if _, err := store.Open(t.Context(), "sqlite:"+dir, store.OpenOptions{}); err == nil {
		t.Error("store.Open of a directory succeeded")
	}
}
