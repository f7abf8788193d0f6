package sqlitestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// TestServerDeadWithoutLockFile: a listed server whose lock file is gone
// (a peer found it dead and rescued its jobs, which removes the file) is
// Dead at once, though its heart-beat is recent; a live one is not.
// Closing a Store without RemoveServer leaves its record and removes its
// lock file, as that rescue does.
func TestServerDeadWithoutLockFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	a := open(t, path, sqlitestore.Options{Worker: "a"})
	b := open(t, path, sqlitestore.Options{Worker: "b"})
	now := time.Unix(1_800_000_000, 0)
	for _, s := range []*sqlitestore.Store{a, b} {
		p := store.RegisterServerParams{Now: now, Server: store.Server{ID: s.WorkerID(), Host: "h", PID: 1, Workers: 1, StartedAt: now}}
		if err := s.RegisterServer(t.Context(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	list, err := a.ListServers(t.Context(), store.ListServersParams{Now: now.Add(time.Second), Lease: "maintenance"})
	if err != nil {
		t.Fatal(err)
	}
	dead := map[string]bool{}
	for _, sv := range list {
		dead[sv.ID] = sv.Dead
	}
	if len(dead) != 2 || dead["a"] || !dead["b"] {
		t.Fatalf("Dead by server = %v; want a alive, b dead", dead)
	}
}
