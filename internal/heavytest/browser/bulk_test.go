package browser

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// gatedStore is a memory store whose CancelMatching call number at (from
// 1) waits, once, until release is closed or its context ends, as a
// durable store's batch may take a while; entered is closed when it
// starts waiting. A call whose context has ended fails, as a durable
// store's does.
type gatedStore struct {
	store.Store
	at      int32
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func newGatedStore(at int) *gatedStore {
	return &gatedStore{Store: memstore.New(), at: int32(at), entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedStore) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	if g.calls.Add(1) == g.at {
		close(g.entered)
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	if err := context.Cause(ctx); err != nil {
		return store.MatchResult{}, err
	}
	return g.Store.CancelMatching(ctx, p)
}

// bulkJobs is the number of jobs the bulk tests act on: three batches.
const bulkJobs = 2*hopper.BulkBatch + 500

// gatedEnv is a dashboard on a client of g holding bulkJobs jobs
// scheduled in queue "bulk", and one in queue "other", whose ID it
// returns.
func gatedEnv(t *testing.T, g *gatedStore) (*env, hopper.ID) {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Store: g, Workers: kinds(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := newEnvOn(t, c, dashboard.Options{})
	reqs := make([]hopper.EnqueueRequest, bulkJobs)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "bulk", Delay: time.Hour}}
	}
	if _, err := c.EnqueueMany(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	return e, e.enqueue("ok", &hopper.EnqueueOptions{Queue: "other", Delay: time.Hour})
}

// within waits for ch, failing the test after a generous bound.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("waited a minute for %s", what)
		panic("unreachable")
	}
}

// browseBulkProgress: a bulk action confirmed in the browser that takes
// longer than a moment lands on its progress page, which shows the
// batches done and, reloading itself, the end.
func browseBulkProgress(t *testing.T, ctx context.Context) {
	g := newGatedStore(2)
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
	within(t, g.entered, "the second batch")
	run(t, ctx, "the progress page", chromedp.WaitVisible(chromedp.CSS(`#bulk[data-state="running"]`)))
	if got := text(t, ctx, "#bulk-count"); got != "1,000 of 2,500 jobs done (40%)." {
		t.Errorf("progress: %q", got)
	}
	screenshot(t, ctx, "bulk-running")
	close(g.release)
	run(t, ctx, "the end, after a reload", chromedp.WaitVisible(chromedp.CSS(`#bulk[data-state="done"]`)))
	if got := text(t, ctx, "#bulk-message"); !strings.HasPrefix(got, "Cancelled 2,500 of 2,500 jobs.") {
		t.Errorf("message: %q", got)
	}
	screenshot(t, ctx, "bulk-done")
}
