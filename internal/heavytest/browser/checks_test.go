package browser

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/httpapi"
	"github.com/hopperq/hopper/internal/dashtest"
)

// browseChecks: an external check, created new, shows as such on the
// alerts page; pinged as a crontab line's curl would, it shows up with its
// last ping; a failure ping shows it down.
func browseChecks(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	ch, err := e.c.AddCheck(context.Background(), "backup", hopper.CheckOptions{Period: time.Hour, Grace: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", e.h)
	mux.Handle(httpapi.PingPrefix+"/", httpapi.NewPing(e.c, httpapi.PingOptions{Logger: dashtest.Quiet()}))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() {
		e.h.(io.Closer).Close()
		srv.Close()
	})
	row := `tr[data-check="backup"]`
	open := func(what, status string) {
		t.Helper()
		run(t, ctx, what, chromedp.Navigate(srv.URL+"/alerts"),
			chromedp.WaitVisible(chromedp.CSS(row+` [data-status]`)))
		if got := text(t, ctx, row+" [data-status]"); got != status {
			t.Errorf("%s: status %q, want %q", what, got, status)
		}
	}
	open("open the alerts", "new")
	if got := text(t, ctx, row+" [data-last-ping]"); got != "never" {
		t.Errorf("last ping of a new check: %q, want never", got)
	}
	if got := text(t, ctx, row+" [data-ping-url]"); got != "/ping/"+ch.PingID {
		t.Errorf("ping URL: %q, want /ping/%s", got, ch.PingID)
	}

	ping := func(path string) {
		t.Helper()
		res, err := srv.Client().Post(srv.URL+"/ping/"+ch.PingID+path, "text/plain", strings.NewReader("nightly backup"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("ping %s: status %d", path, res.StatusCode)
		}
	}
	ping("")
	stored, err := e.c.GetCheck(context.Background(), "backup")
	if err != nil || stored.LastPingAt.IsZero() {
		t.Fatalf("the check after a ping: %+v, %v", stored, err)
	}
	open("the check pinged", "up")
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr[data-check="backup"] [data-last-ping] span').title`))
	if want := stored.LastPingAt.UTC().Format("2006-01-02 15:04:05 MST"); err != nil || title != want {
		t.Errorf("last ping shown at %q (%v), want %q", title, err, want)
	}
	if got := text(t, ctx, row+" [data-last-ping]"); got == "never" || got == "" {
		t.Errorf("last ping of a pinged check: %q", got)
	}
	screenshot(t, ctx, "checks")

	ping("/fail")
	open("the check failed", "down")
}
