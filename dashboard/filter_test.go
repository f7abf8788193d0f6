package dashboard

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/internal/logtest"
	"github.com/hopperq/hopper/internal/pgtest"
	_ "github.com/hopperq/hopper/store/pgstore" // postgres://
)

// TestFilterNamesNoJobHas: a list filter or search holding a NUL or bytes
// that are not UTF-8 is bad input on every store — 400 naming the field,
// as the API answers, and no ERROR in the log — never a store failure
// (PostgreSQL refuses such text in a query).
func TestFilterNamesNoJobHas(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var log logtest.Buffer
			cfg := hopper.Config{Workers: dashtest.Kinds(), Logger: dashtest.Quiet()}
			var c *hopper.Client
			var err error
			switch name {
			case "memory":
				c, err = hopper.NewClient(cfg)
			case "sqlite":
				c, err = hopper.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "h.db"), cfg)
			case "postgres":
				c, err = hopper.Open(ctx, pgtest.StoreURL(t, 2), cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			e := newEnvOn(t, c, Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			e.enqueue("ok", nil)
			for _, bad := range []string{"a\x00b", "a\xffb"} {
				for _, tc := range []struct{ path, field string }{
					{"/jobs?queue=" + url.QueryEscape(bad), "queue"},
					{"/jobs?kind=" + url.QueryEscape(bad), "kind"},
					{"/jobs?state=dead&kind=" + url.QueryEscape(bad), "kind"},
					{"/dlq?queue=" + url.QueryEscape(bad), "queue"},
					{"/jobs?q=" + url.QueryEscape(bad), "kind"}, // a search that is not a job ID is a kind
				} {
					r := e.get(tc.path, "").want(t, 400)
					if !strings.Contains(r.body, tc.field+": ") {
						t.Errorf("GET %s: the page does not name %s:\n%s", tc.path, tc.field, clip(r.body))
					}
				}
			}
			if strings.Contains(log.String(), "level=ERROR") {
				t.Errorf("bad filters were logged as errors:\n%s", log.String())
			}
			e.get("/jobs?queue=default&kind=ok", "").want(t, 200)
		})
	}
}
