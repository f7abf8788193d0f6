package browser

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/dashboard"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/job"
	_ "github.com/hopperq/hopper/store/sqlitestore"
)

// The browser tests drive Debian's chromium through chromedp: the page a
// person sees, its script, its live updates and its forms. They wait on
// what the page shows (WaitVisible, Poll), never on the clock.
//
// go test ./browser -run TestBrowser -update-png   (in internal/heavytest)
// rewrites docs/dashboard.png (or HOPPER_DASHBOARD_PNG=1); HOPPER_DASHBOARD_SHOTS=DIR keeps every
// screenshot in DIR instead of the test's temporary directory.
var updatePNG = flag.Bool("update-png", false, "write docs/dashboard.png from the browser test of the overview")

// browserTimeout bounds each browser scenario, its setup included: a
// failing scenario ends, a slow machine (CI runs every package at once,
// with -race) does not fail it.
const browserTimeout = 2 * time.Minute

// TestBrowser runs the browser scenarios in one chromium, each in a
// browser context of its own (own cookies), in parallel.
func TestBrowser(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	dir, err := os.MkdirTemp("", "hopper-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // as root, chromium needs it
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()  // waits for chromium to exit
		for range 50 { // its children may write a little longer
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err := chromedp.Do(browser); err != nil { // start it
		t.Fatalf("start %s: %v", bin, err)
	}
	tab := func(t *testing.T) context.Context {
		t.Helper()
		ctx, cancel := context.WithTimeout(browser, browserTimeout)
		ctx, cancelTab := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		t.Cleanup(func() { cancelTab(); cancel() })
		return ctx
	}
	for name, fn := range map[string]func(*testing.T, context.Context){
		"Overview":        browseOverview,
		"LiveList":        browseLiveList,
		"LivePolling":     browseLivePolling,
		"LiveReconnect":   browseLiveReconnect,
		"RetryFromDLQ":    browseRetryFromDLQ,
		"Cancel":          browseCancel,
		"PauseSchedule":   browsePauseSchedule,
		"PauseQueue":      browsePauseQueue,
		"CrossOriginCSRF": browseCrossOrigin,
		"SignIn":          browseSignIn,
		"BulkProgress":    browseBulkProgress,
		"Checks":          browseChecks,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, tab(t))
		})
	}
}

// chromium finds the browser: $HOPPER_CHROMIUM, else chromium on PATH.
// Without one the test skips with one line, or fails under CI.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HOPPER_CHROMIUM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	const msg = "no chromium: set HOPPER_CHROMIUM or apt-get install chromium"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// serve serves e's dashboard over HTTP for the browser.
func serve(t *testing.T, e *env) string {
	srv := httptest.NewServer(e.h)
	t.Cleanup(func() {
		e.h.(io.Closer).Close() // ends the page's live stream, which would keep Close waiting
		srv.Close()
	})
	return srv.URL
}

// run runs browser actions, failing the test on an error.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// waitFor waits until the JavaScript expression is true in the page.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(browserTimeout))); err != nil {
		t.Fatalf("waiting for %s (%s): %v", what, expr, err)
	}
}

// submit clicks a button that posts a form and waits for the page that
// answers, returning its status. The click is the page's own (a live
// update may replace the button between a lookup and a synthetic mouse
// click).
func submit(t *testing.T, ctx context.Context, sel string) int64 {
	t.Helper()
	run(t, ctx, "find "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	res, err := chromedp.RunResponse(ctx, chromedp.Evaluate[chromedp.Void](
		fmt.Sprintf(`document.querySelector(%q).click()`, sel)))
	if err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
	return res.Status
}

// screenshot saves the page as name.png in the test's directory (or
// $HOPPER_DASHBOARD_SHOTS) and returns the image.
func screenshot(t *testing.T, ctx context.Context, name string) []byte {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := os.Getenv("HOPPER_DASHBOARD_SHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	return png
}

// marker is set on a loaded page: still set later, the page was not
// reloaded.
const marker = `window.__hopperNoReload = true`

// browseOverview: the overview shows the counts the store has (a SQLite
// file), and the screenshots of the README.
func browseOverview(t *testing.T, ctx context.Context) {
	c, err := hopper.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "hopper.db")+"?durability=normal", // the history is thousands of commits
		hopper.Config{Workers: dashtest.Kinds(), Logger: dashtest.Quiet(), ExternalKinds: []string{"send_email", "resize_image", "nightly_report"}})
	if err != nil {
		t.Fatal(err)
	}
	demoJobs(t, c)
	e := newEnvOn(t, c, dashboard.Options{Title: "Hopper"})
	url := serve(t, e)
	run(t, ctx, "open the overview", chromedp.Navigate(url+"/"), chromedp.WaitVisible(chromedp.ID("overview")))
	st, err := c.Stats(context.Background(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for q, byState := range st.Queues {
		for _, s := range job.States {
			sel := fmt.Sprintf(`td[data-queue=%q][data-state=%q]`, q, s)
			if got, want := text(t, ctx, sel), commas(byState[s]); got != want {
				t.Errorf("overview, queue %s, %s: shows %s, the store has %s", q, s, got, want)
			}
		}
	}
	total := 0
	for _, byState := range st.Queues {
		for _, n := range byState {
			total += n
		}
	}
	if got := text(t, ctx, "#total-jobs"); got != commas(total) {
		t.Errorf("total: shows %s, the store has %d", got, total)
	}
	if got := text(t, ctx, "#card-dead"); got != commas(st.Finished[hopper.StateDead]) {
		t.Errorf("dead in the last hour: shows %s, the store has %d", got, st.Finished[hopper.StateDead])
	}
	png := screenshot(t, ctx, "overview")
	if *updatePNG || os.Getenv("HOPPER_DASHBOARD_PNG") != "" {
		if err := os.WriteFile(filepath.Join("..", "..", "..", "docs", "dashboard.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/dashboard.png")
	}
	// Dark mode from the system setting, and a phone.
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	bg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.body).backgroundColor`))
	if err != nil || bg != "rgb(14, 16, 22)" {
		t.Errorf("dark mode: body background %q, %v", bg, err)
	}
	screenshot(t, ctx, "overview-dark")
	run(t, ctx, "open the jobs", chromedp.Navigate(url+"/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")))
	screenshot(t, ctx, "jobs-dark")
	run(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)), chromedp.Navigate(url+"/"),
		chromedp.WaitVisible(chromedp.ID("overview")))
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil || wide {
		t.Errorf("phone: the page is wider than the screen (%v)", err)
	}
	screenshot(t, ctx, "overview-phone")
	run(t, ctx, "phone, jobs", chromedp.Navigate(url+"/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")))
	if wide, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`)); wide {
		t.Errorf("phone: the jobs page is wider than the screen (its table should scroll in its box)")
	}
	screenshot(t, ctx, "jobs-phone")
}

// demoJobs fills c's store with an hour of finished jobs (demoHistory), a
// few queues of jobs in every state, three of them running, and a
// schedule, as the screenshot shows them.
func demoJobs(t *testing.T, c *hopper.Client) {
	ctx := context.Background()
	var reqs []hopper.EnqueueRequest
	add := func(n int, kind, queue string, o hopper.EnqueueOptions) {
		o.Queue = queue
		for range n {
			oo := o
			reqs = append(reqs, hopper.EnqueueRequest{Kind: kind, Args: json.RawMessage(`{"to":"ada@example.com"}`), Options: &oo})
		}
	}
	enqueue := func() []hopper.ID {
		res, err := c.EnqueueMany(ctx, reqs)
		if err != nil {
			t.Fatal(err)
		}
		reqs = nil
		ids := make([]hopper.ID, len(res))
		for i, r := range res {
			ids[i] = r.ID
		}
		return ids
	}
	demoHistory(t, c) // before the client starts: its pool would run them now
	// Jobs that run now, with the started client.
	add(10, "ok", "default", hopper.EnqueueOptions{})
	add(2, "fail", "default", hopper.EnqueueOptions{})
	add(18, "ok", "emails", hopper.EnqueueOptions{})
	add(3, "exec", "reports", hopper.EnqueueOptions{})
	ran := enqueue()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ran {
		if _, err := c.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// Jobs of kinds other processes run: waiting.
	add(180, "send_email", "emails", hopper.EnqueueOptions{RunAt: time.Now().Add(-7 * time.Minute)})
	add(12, "resize_image", "images", hopper.EnqueueOptions{Priority: -5})
	add(30, "send_email", "emails", hopper.EnqueueOptions{Delay: 20 * time.Minute})
	add(4, "nightly_report", "reports", hopper.EnqueueOptions{Delay: 6 * time.Hour})
	enqueue()
	// Three jobs running.
	started := c.Subscribe(job.EventStarted)
	defer started.Unsubscribe()
	add(3, "block", "reports", hopper.EnqueueOptions{})
	enqueue()
	for range 3 {
		<-started.C
	}
	if _, err := c.AddSchedule(ctx, "nightly-report", hopper.ScheduleOptions{Cron: "0 2 * * 1-5", TimeZone: "Europe/Berlin", Kind: "nightly_report"}); err != nil {
		t.Fatal(err)
	}
}

// demoHistory gives the chart an hour of history: jobs run and finished
// through the step API at past minutes (the client is not started yet), so
// the store's own series draws them as it draws every process's work.
func demoHistory(t *testing.T, c *hopper.Client) {
	ctx := context.Background()
	now := time.Now()
	const minutes = 60
	for m := range minutes - 1 { // the minutes before this one
		n := 10 + (5*((m*7)%11)+(m%5)*6)/4
		if m > 38 && m < 44 {
			n /= 3 // a slow patch
		}
		at := now.Add(-time.Duration(minutes-1-m) * time.Minute)
		var reqs []hopper.EnqueueRequest
		for i := range n {
			q := []string{"default", "emails", "emails"}[i%3]
			reqs = append(reqs, hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{RunAt: at.Add(-time.Second), Queue: q}})
		}
		if m%6 == 2 {
			reqs = append(reqs, hopper.EnqueueRequest{Kind: "fail", Options: &hopper.EnqueueOptions{RunAt: at.Add(-time.Second)}})
		}
		if _, err := c.EnqueueMany(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RunReady(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
}

// browseLiveList: a job enqueued through the client appears in the open
// list without a reload.
func browseLiveList(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	first := e.enqueue("ok", nil)
	url := serve(t, e)
	run(t, ctx, "open the jobs", chromedp.Navigate(url+"/jobs"), chromedp.WaitVisible(chromedp.ID("job-"+strconv.FormatInt(int64(first), 10))))
	waitFor(t, ctx, "the live stream", `document.getElementById("live").classList.contains("on")`)
	run(t, ctx, "mark the page", chromedp.Evaluate[chromedp.Void](marker))
	id := e.enqueue("ok", &hopper.EnqueueOptions{Queue: "live"})
	row := "job-" + strconv.FormatInt(int64(id), 10)
	run(t, ctx, "the new job appears", chromedp.WaitVisible(chromedp.ID(row)))
	if noReload, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__hopperNoReload === true`)); !noReload {
		t.Errorf("the page was reloaded")
	}
	if got := text(t, ctx, "#"+row+" .badge"); got != "available" {
		t.Errorf("new row's state: %q", got)
	}
}

// browseLivePolling: without EventSource the page polls, and the new job
// still appears without a reload.
func browseLivePolling(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	url := serve(t, e)
	run(t, ctx, "start the tab")
	if _, err := chromedp.Call(ctx, cdppage.AddScriptToEvaluateOnNewDocument,
		cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: "delete window.EventSource"}); err != nil {
		t.Fatal(err)
	}
	run(t, ctx, "open the jobs", chromedp.Navigate(url+"/jobs"), chromedp.WaitVisible(chromedp.ID("jobs")),
		chromedp.Evaluate[chromedp.Void](marker))
	waitFor(t, ctx, "polling", `document.getElementById("live").classList.contains("poll")`)
	id := e.enqueue("ok", nil)
	run(t, ctx, "the new job appears", chromedp.WaitVisible(chromedp.ID("job-"+strconv.FormatInt(int64(id), 10))))
	if noReload, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__hopperNoReload === true`)); !noReload {
		t.Errorf("the page was reloaded")
	}
}

// browseRetryFromDLQ: a dead job is retried from the dead-letter queue
// page, and its page shows it running, then completed, without a reload.
func browseRetryFromDLQ(t *testing.T, ctx context.Context) {
	release := make(chan struct{})
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "flaky", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if j := hopper.JobFromContext(ctx); len(j.Attempts) == 0 {
			return nil, hopper.Permanent(errors.New("upstream timed out"))
		}
		select { // the retry runs until the test lets it finish
		case <-release:
			return "done", nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: dashtest.Quiet(), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, dashboard.Options{})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	id := e.enqueue("flaky", nil)
	wctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()
	if j, err := c.Wait(wctx, id); err != nil || j.State != hopper.StateDead {
		t.Fatalf("the job did not die: %v %v", j, err)
	}
	url := serve(t, e)
	row := "#job-" + strconv.FormatInt(int64(id), 10)
	run(t, ctx, "open the DLQ", chromedp.Navigate(url+"/dlq"), chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row+` input[name="ids"]`)))
	if got := text(t, ctx, "#selected"); got != "1 selected" {
		t.Errorf("selection: %q", got)
	}
	screenshot(t, ctx, "dlq")
	if status := submit(t, ctx, "#bulk-retry"); status != 200 {
		t.Fatalf("retry: status %d", status)
	}
	if got := text(t, ctx, "h1"); got != "Retry 1 job?" {
		t.Errorf("confirmation: %q", got)
	}
	screenshot(t, ctx, "confirm")
	if status := submit(t, ctx, "#confirm"); status != 200 {
		t.Fatalf("confirm: status %d", status)
	}
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "Retried 1 of 1") {
		t.Errorf("after retrying: %q", got)
	}
	run(t, ctx, "the job leaves the DLQ", chromedp.WaitNotPresent(chromedp.CSS(row)))
	run(t, ctx, "open the job", chromedp.Navigate(url+"/jobs/"+strconv.FormatInt(int64(id), 10)),
		chromedp.WaitVisible(chromedp.CSS(`#job[data-state="running"]`)), chromedp.Evaluate[chromedp.Void](marker))
	waitFor(t, ctx, "the live stream", `document.getElementById("live").classList.contains("on")`)
	close(release)
	run(t, ctx, "the job completes", chromedp.WaitVisible(chromedp.CSS(`#job[data-state="completed"]`)))
	if noReload, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__hopperNoReload === true`)); !noReload {
		t.Errorf("the page was reloaded")
	}
	if got := text(t, ctx, "#job-state"); got != "completed" {
		t.Errorf("state badge: %q", got)
	}
	screenshot(t, ctx, "job")
}

// browseCancel: cancel a waiting job from its page.
func browseCancel(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	url := serve(t, e)
	run(t, ctx, "open the job", chromedp.Navigate(url+"/jobs/"+strconv.FormatInt(int64(id), 10)),
		chromedp.WaitVisible(chromedp.CSS(`#job[data-state="scheduled"]`)))
	if status := submit(t, ctx, "#cancel"); status != 200 {
		t.Fatalf("cancel: status %d", status)
	}
	run(t, ctx, "cancelled", chromedp.WaitVisible(chromedp.CSS(`#job[data-state="cancelled"]`)))
	if got := text(t, ctx, "#flash"); !strings.Contains(got, "cancelled") {
		t.Errorf("message: %q", got)
	}
	if st := e.job(id).State; st != hopper.StateCancelled {
		t.Errorf("the store has the job %s", st)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#cancel").length`)); n != 0 {
		t.Errorf("a cancelled job still offers cancel")
	}
}

// browsePauseSchedule: pause a schedule from the schedules page, which
// shows its monitor and the outputs it keeps.
func browsePauseSchedule(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	if _, err := e.c.AddSchedule(context.Background(), "nightly", hopper.ScheduleOptions{Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Kind: "ok",
		Monitor: &hopper.Monitor{StartGrace: 5 * time.Minute, Channels: []string{"ops"}}}); err != nil {
		t.Fatal(err)
	}
	url := serve(t, e)
	card := `article[data-schedule="nightly"]`
	run(t, ctx, "open the schedules", chromedp.Navigate(url+"/schedules"), chromedp.WaitVisible(chromedp.CSS(card+" .st-active")))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('article[data-schedule="nightly"] ol.fires li').length`)); n != 5 {
		t.Errorf("%d next fire times shown, want 5", n)
	}
	if got := text(t, ctx, card+" [data-monitor]"); got != "start within 5m; notify ops" {
		t.Errorf("monitor shown: %q", got)
	}
	if got := text(t, ctx, card+" [data-output-kept]"); got != "the newest 3 successful and 10 failed runs (defaults)" {
		t.Errorf("output kept shown: %q", got)
	}
	if status := submit(t, ctx, card+` button[data-action="pause"]`); status != 200 {
		t.Fatalf("pause: status %d", status)
	}
	run(t, ctx, "paused", chromedp.WaitVisible(chromedp.CSS(card+" .st-paused")), chromedp.WaitVisible(chromedp.CSS(card+` button[data-action="resume"]`)))
	if sc, err := e.c.GetSchedule(context.Background(), "nightly"); err != nil || !sc.Paused {
		t.Errorf("the store has the schedule %+v, %v", sc, err)
	}
	screenshot(t, ctx, "schedules")
}

// browsePauseQueue: pause a queue from the queues page; a job of it then
// says why it waits.
func browsePauseQueue(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Queue: "mail"})
	url := serve(t, e)
	row := `tr[data-queue="mail"]`
	run(t, ctx, "open the queues", chromedp.Navigate(url+"/queues"), chromedp.WaitVisible(chromedp.CSS(row+" .st-active")))
	if status := submit(t, ctx, row+` button[data-action="pause"]`); status != 200 {
		t.Fatalf("pause: status %d", status)
	}
	run(t, ctx, "paused", chromedp.WaitVisible(chromedp.CSS(row+" .st-paused")), chromedp.WaitVisible(chromedp.CSS(row+` button[data-action="resume"]`)))
	qs, err := e.c.QueueStates(context.Background())
	if err != nil || len(qs) != 1 || !qs[0].Paused {
		t.Errorf("the store has the queues %+v, %v", qs, err)
	}
	screenshot(t, ctx, "queues")
	run(t, ctx, "open the held job", chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", url, id)), chromedp.WaitVisible(chromedp.ID("wait-reason")))
	if got := text(t, ctx, "#wait-reason"); !strings.Contains(got, "queue mail paused") {
		t.Errorf("the held job's page says %q", got)
	}
}

// browseCrossOrigin: a page on another site that posts to the dashboard
// (cross-site request forgery) is refused, and nothing changes.
func browseCrossOrigin(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	dash := serve(t, e) // http://127.0.0.1:PORT
	target := fmt.Sprintf("%s/jobs/%d/cancel", dash, id)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s"><button id="go">Win a prize</button></form>`, target)
	}))
	t.Cleanup(evil.Close)
	// Another site: localhost is not 127.0.0.1.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)
	run(t, ctx, "open the other site", chromedp.Navigate(evilURL), chromedp.WaitVisible(chromedp.ID("go")))
	if status := submit(t, ctx, "#go"); status != http.StatusForbidden {
		t.Errorf("cross-site post: status %d, want 403", status)
	}
	if got := text(t, ctx, "#error-message"); !strings.Contains(got, "another site") {
		t.Errorf("refusal: %q", got)
	}
	if st := e.job(id).State; st != hopper.StateScheduled {
		t.Errorf("the cross-site post changed the job: %s", st)
	}
}

// browseSignIn: with tokens, the dashboard asks for one, and a read token
// sees no action.
func browseSignIn(t *testing.T, ctx context.Context) {
	e := newEnv(t, dashboard.Options{Auth: dashtest.Tokens(t)})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	url := serve(t, e)
	jobURL := fmt.Sprintf("%s/jobs/%d", url, id)
	run(t, ctx, "open a job", chromedp.Navigate(jobURL), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "not-the-token-000000"))
	if status := submit(t, ctx, "#sign-in"); status != http.StatusUnauthorized {
		t.Errorf("bad token: status %d", status)
	}
	run(t, ctx, "sign in", chromedp.WaitVisible(chromedp.ID("login-error")), chromedp.SendKeys(chromedp.ID("token"), dashtest.ReadToken))
	submit(t, ctx, "#sign-in")
	run(t, ctx, "the job, read-only", chromedp.WaitVisible(chromedp.CSS(`#job[data-state="scheduled"]`)))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != jobURL {
		t.Errorf("after signing in: at %s, want %s", loc, jobURL)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("main form button").length`)); n != 0 {
		t.Errorf("a read token sees %d action buttons", n)
	}
	if got := text(t, ctx, ".scope"); got != "read" {
		t.Errorf("scope shown: %q", got)
	}
}
