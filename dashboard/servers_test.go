package dashboard

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/internal/logtest"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// TestServersPage: the servers page lists the started client, alive and
// leading, and a server that stopped beating as gone, its fields escaped;
// the navigation links to it, and it reloads itself.
func TestServersPage(t *testing.T) {
	t.Parallel()
	ms := memstore.New()
	leading := make(chan struct{}, 1)
	c, err := hopper.NewClient(hopper.Config{Store: ms, WorkerID: "web-1", Concurrency: 4, Workers: dashtest.Kinds(),
		Logger: logtest.Signal("leading maintenance", leading)})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, Options{})
	if body := e.get("/servers", "").want(t, 200).body; !strings.Contains(body, "No servers") {
		t.Errorf("before Start: no empty note in\n%s", clip(body))
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	<-leading
	ctx := context.Background()
	if err := ms.RegisterServer(ctx, store.RegisterServerParams{Now: time.Now().Add(-time.Minute), Server: store.Server{
		ID: "ghost", Host: `<img src=x onerror=alert(1)>`, Version: "v0.9.0", StartedAt: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RegisterWorker(ctx, hopper.WorkerSpec{Kinds: []string{"mail"}, Slots: 7, Name: "py", Host: "box"}, ""); err != nil {
		t.Fatal(err)
	}
	body := e.get("/servers", "").want(t, 200).body
	for _, want := range []string{
		`data-server="remote:`, `data-remote`, "py@box",
		`<a href="/servers" aria-current="page">Servers</a>`, `<meta http-equiv="refresh" content="5">`,
		"2 alive, 1 gone", `data-server="web-1"`, `data-leader>leader</span>`, `>alive</span>`,
		`data-server="ghost"`, `>gone</span>`, "&lt;img src=x onerror=alert(1)&gt;", "v0.9.0",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in the servers page\n%s", want, clip(body))
		}
	}
	if strings.Contains(body, "<img src=x") {
		t.Error("the host name is not escaped")
	}
	if strings.Index(body, `data-server="ghost"`) > strings.Index(body, `data-server="web-1"`) {
		t.Error("servers not in start order: ghost started first")
	}
	if strings.Count(body, "data-leader") != 1 {
		t.Errorf("%d leaders shown, want 1", strings.Count(body, "data-leader"))
	}
}
