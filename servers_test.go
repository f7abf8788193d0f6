package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// brief is what TestServers compares of a server.
func brief(s hopper.ServerInfo) string {
	return fmt.Sprintf("%s workers %d alive %v leader %v running %d", s.ID, s.Workers, s.Alive, s.Leader, s.Running)
}

func wantServers(t *testing.T, what string, c *hopper.Client, want ...string) []hopper.ServerInfo {
	t.Helper()
	got, err := c.Servers(context.Background())
	if err != nil {
		t.Fatalf("%s: Servers: %v", what, err)
	}
	var briefs []string
	for _, s := range got {
		briefs = append(briefs, brief(s))
	}
	if fmt.Sprint(briefs) != fmt.Sprint(want) {
		t.Errorf("%s: servers\n%v\nwant\n%v", what, briefs, want)
	}
	return got
}

// TestServers: started clients sharing a store list one another, with who
// leads and what each runs; a heart-beat renews each record, Stop removes
// it, a server that stopped beating is listed as gone and pruned an hour
// later; Leading says whether this client leads.
func TestServers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		ms := memstore.New()
		release := make(chan struct{})
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-release
			return nil, nil
		}, nil)
		a := silentClient(t, hopper.Config{Store: ms, WorkerID: "a", Concurrency: 2, Workers: ws})
		b := silentClient(t, hopper.Config{Store: ms, WorkerID: "b", Concurrency: 3, ExternalKinds: []string{"block"}})
		if a.Leading() {
			t.Error("a leads before it started")
		}
		wantServers(t, "none started", a)
		start := time.Now()
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := b.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Enqueue(ctx, "block", nil, nil); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // a runs it
		got := wantServers(t, "both started", b, "a workers 2 alive true leader true running 1", "b workers 3 alive true leader false running 0")
		host, _ := os.Hostname()
		if s := got[0]; s.Host != host || s.PID != os.Getpid() || s.Version == "" || !s.StartedAt.Equal(start) || !s.HeartbeatAt.Equal(start) {
			t.Errorf("a's record: %+v, want host %s, pid %d, a version, started and beating at %v", s, host, os.Getpid(), start)
		}
		if !a.Leading() || b.Leading() {
			t.Errorf("Leading: a %v, b %v; want true, false", a.Leading(), b.Leading())
		}

		time.Sleep(5 * time.Second)
		got = wantServers(t, "5s later", a, "a workers 2 alive true leader true running 1", "b workers 3 alive true leader false running 0")
		if beat := got[0].HeartbeatAt; !beat.After(start.Add(3*time.Second)) || !got[0].StartedAt.Equal(start) {
			t.Errorf("a's record 6s after its start: started %v, beat %v; want a beat within the last 3.4s", got[0].StartedAt, beat)
		}

		stopGracefully(t, b)
		wantServers(t, "b stopped", a, "a workers 2 alive true leader true running 1")

		// A server that died: its record stops beating.
		if err := ms.RegisterServer(ctx, store.RegisterServerParams{Now: time.Now().Add(-10 * time.Second),
			Server: store.Server{ID: "ghost", Workers: 1, StartedAt: time.Now().Add(-time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		wantServers(t, "a dead server", a, "ghost workers 1 alive false leader false running 0", "a workers 2 alive true leader true running 1")
		time.Sleep(time.Hour + time.Minute) // the leader's cleaner runs every minute
		wantServers(t, "an hour later", a, "a workers 2 alive true leader true running 1")

		// A stopping server stays listed, alive, while its workers finish.
		c := silentClient(t, hopper.Config{Store: ms})
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			stopGracefully(t, a)
		}()
		time.Sleep(time.Minute)
		if a.Leading() {
			t.Error("a leads after Stop")
		}
		wantServers(t, "a stopping", c, "a workers 2 alive true leader false running 1")
		close(release)
		<-stopped
		if _, err := a.Servers(ctx); !errors.Is(err, hopper.ErrClosed) {
			t.Errorf("Servers after Stop: %v, want ErrClosed", err)
		}
		wantServers(t, "every server stopped", c)
	})
}
