package browser

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/internal/dashtest"
)

// gatedEnv is a dashboard on a client of g holding dashtest.BulkJobs jobs
// scheduled in queue "bulk", and one in queue "other", whose ID it
// returns.
func gatedEnv(t *testing.T, g *dashtest.GatedStore) (*env, hopper.ID) {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Store: g, Workers: dashtest.Kinds(), Logger: dashtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := newEnvOn(t, c, dashboard.Options{})
	reqs := make([]hopper.EnqueueRequest, dashtest.BulkJobs)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "bulk", Delay: time.Hour}}
	}
	if _, err := c.EnqueueMany(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	return e, e.enqueue("ok", &hopper.EnqueueOptions{Queue: "other", Delay: time.Hour})
}

// browseBulkProgress: a bulk action confirmed in the browser that takes
// longer than a moment lands on its progress page, which shows the
// batches done and, reloading itself, the end.
func browseBulkProgress(t *testing.T, ctx context.Context) {
	g := dashtest.NewGatedStore(2)
	e, _ := gatedEnv(t, g)
	url := serve(t, e)
	run(t, ctx, "open the queue", chromedp.Navigate(url+"/jobs?queue=bulk"), chromedp.WaitVisible(chromedp.ID("select-all")),
		chromedp.Click(chromedp.ID("select-all")))
	if status := submit(t, ctx, "#bulk-cancel"); status != 200 {
		t.Fatalf("cancel: status %d", status)
	}
	if got := text(t, ctx, "h1"); !strings.Contains(got, `Cancel all jobs in queue "bulk"`) {
		t.Errorf("confirmation: %q", got)
	}
	if status := submit(t, ctx, "#confirm"); status != 200 {
		t.Fatalf("confirm: status %d", status)
	}
	dashtest.Within(t, g.Entered, "the second batch")
	run(t, ctx, "the progress page", chromedp.WaitVisible(chromedp.CSS(`#bulk[data-state="running"]`)))
	if got := text(t, ctx, "#bulk-count"); got != "1,000 of 2,500 jobs done (40%)." {
		t.Errorf("progress: %q", got)
	}
	screenshot(t, ctx, "bulk-running")
	close(g.Release)
	run(t, ctx, "the end, after a reload", chromedp.WaitVisible(chromedp.CSS(`#bulk[data-state="done"]`)))
	if got := text(t, ctx, "#bulk-message"); !strings.HasPrefix(got, "Cancelled 2,500 of 2,500 jobs.") {
		t.Errorf("message: %q", got)
	}
	screenshot(t, ctx, "bulk-done")
}
