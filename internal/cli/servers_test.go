package cli

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/logtest"
)

// TestServersCommand: hopper servers lists a started client of the
// database, alive and leading, as a table and as JSON, and says so when
// none runs.
func TestServersCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "migrate").ok(t)
	r := hop(t, db, "servers").ok(t)
	if r.out != "" || r.err == "" {
		t.Errorf("no server: stdout %q, stderr %q; want a note on stderr only", r.out, r.err)
	}
	var none []hopper.ServerInfo
	hop(t, db, "servers", "--json").ok(t).decode(&none)
	if none == nil || len(none) != 0 {
		t.Errorf("no server, --json: %q, want []", r.out)
	}

	ctx := context.Background()
	leading := make(chan struct{}, 1)
	c, err := hopper.Open(ctx, "sqlite:"+db, hopper.Config{Concurrency: 7, Logger: logtest.Signal("leading maintenance", leading)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	<-leading
	pid := strconv.Itoa(os.Getpid())
	hop(t, db, "servers").ok(t).has(t, "ID", "HEARTBEAT", "LEADER", "RUNNING", c.WorkerID(), pid, "alive", "yes", " 7 ")
	var got []hopper.ServerInfo
	hop(t, db, "servers", "--json").ok(t).decode(&got)
	if len(got) != 1 || got[0].ID != c.WorkerID() || !got[0].Alive || !got[0].Leader || got[0].Workers != 7 || got[0].PID != os.Getpid() {
		t.Errorf("servers --json: %+v, want %s alive and leading with 7 workers", got, c.WorkerID())
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	hop(t, db, "servers", "--json").ok(t).decode(&got)
	if len(got) != 0 {
		t.Errorf("after Stop: %+v, want none", got)
	}
}
