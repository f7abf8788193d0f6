package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hopperq/hopper"
)

// bulkRunner runs the confirmed bulk actions in the background, one at a
// time: a request for another while one runs is told so. It keeps the
// latest action, running or ended, for the progress page. Its actions run
// under a context of its own, which close cancels (the handler's Close):
// a request's end, or its client's, does not stop them.
type bulkRunner struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	latest *bulkTask // nil until the first
	closed bool
}

func newBulkRunner() *bulkRunner {
	b := &bulkRunner{}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	return b
}

// start runs t with run on a goroutine of its own and returns nil, unless
// another action is running: then it returns that one and t does not run.
// After close, t ends at once with hopper.ErrClosed.
func (b *bulkRunner) start(t *bulkTask, run func(context.Context, *bulkTask)) (running *bulkTask) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.latest; l != nil && !l.ended() {
		return l
	}
	b.latest = t
	if b.closed {
		t.finish(hopper.ErrClosed)
		return nil
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		run(b.ctx, t)
	}()
	return nil
}

// last returns the latest action, nil if none ran.
func (b *bulkRunner) last() *bulkTask {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.latest
}

// close stops the running action, if any, and waits for it. The batches
// done stay done.
func (b *bulkRunner) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// bulkTask is one bulk action: what it acts on, and how far it got.
type bulkTask struct {
	act     bulkAction
	all     bool
	filter  filter
	upto    hopper.ID
	ids     []hopper.ID
	except  []string // kinds left alone (hopper.BulkOptions.ExceptKinds)
	back    string
	started time.Time
	done    chan struct{} // closed when it ends

	mu    sync.Mutex
	res   hopper.BulkResult
	err   error
	endAt time.Time
}

func newBulkTask(act bulkAction, all bool, f filter, upto hopper.ID, ids []hopper.ID, back string) *bulkTask {
	return &bulkTask{act: act, all: all, filter: f, upto: upto, ids: ids, back: back, started: time.Now(),
		done: make(chan struct{})}
}

// progress records the totals so far.
func (t *bulkTask) progress(r hopper.BulkResult) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.res = r
}

// finish ends t with err (nil: it went through).
func (t *bulkTask) finish(err error) {
	t.mu.Lock()
	t.err, t.endAt = err, time.Now()
	t.mu.Unlock()
	close(t.done)
}

func (t *bulkTask) ended() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// bulkView is a bulk action as the progress page shows it.
type bulkView struct {
	Verb    string // "Cancel"
	What    string // "all dead jobs in queue "emails"", "3 selected jobs"
	Summary string // verb, what and progress, in a line
	State   string // running, done, failed, stopped
	Running bool
	Failed  bool // stopped by an error (or by the server stopping)
	Empty   bool // ended having changed nothing
	Done    int
	Total   int
	Percent int
	Started time.Time
	Took    time.Duration
	Message string // once ended: what it did
	Back    string
	Batch   int // jobs per committed batch
}

// snapshot returns t as it is now.
func (t *bulkTask) snapshot() bulkView {
	t.mu.Lock()
	res, err, endAt := t.res, t.err, t.endAt
	t.mu.Unlock()
	v := bulkView{Verb: t.act.verb, Done: res.Done, Total: res.Total, Started: t.started, Back: t.back, Batch: hopper.BulkBatch}
	if t.all {
		v.What = "all " + t.filter.describe()
	} else {
		v.What = fmt.Sprintf("%s selected %s", num(len(t.ids)), plural(len(t.ids), "job", "jobs"))
		v.Batch = bulkBatch
	}
	switch {
	case res.Total > 0:
		v.Percent = min(100, res.Done*100/res.Total)
	case !endAt.IsZero():
		v.Percent = 100
	}
	v.Summary = fmt.Sprintf("%s %s: %s of %s done", v.Verb, v.What, num(res.Done), num(res.Total))
	if endAt.IsZero() {
		v.State, v.Running, v.Took = "running", true, time.Since(t.started)
		return v
	}
	v.Took = endAt.Sub(t.started)
	v.State, v.Message = "done", t.outcome(res)
	v.Empty = res.Done == 0
	if err != nil {
		v.State, v.Failed = "failed", true
		v.Message = fmt.Sprintf("%s stopped after %s of %s jobs: %s The jobs done so far stay done, the others are as they were: start the action again for them.",
			v.Verb, num(res.Done), num(res.Total), bulkReason(err))
		if errors.Is(err, context.Canceled) || errors.Is(err, hopper.ErrClosed) {
			v.State = "stopped"
		}
	}
	return v
}

// outcome says what a bulk action that went through did.
func (t *bulkTask) outcome(res hopper.BulkResult) string {
	if res.Total == 0 && res.Done == 0 {
		return fmt.Sprintf("No job left to %s: %s", t.act.name, t.act.applies)
	}
	msg := fmt.Sprintf("%s %s of %s jobs.", capitalize(t.act.past), num(res.Done), num(res.Total))
	switch {
	case !t.all && res.Done < res.Total:
		msg += " " + t.act.applies
	case t.act.name == "retry" && res.Skipped > 0:
		msg += fmt.Sprintf(" %s stayed dead: another unfinished job holds their unique key.", num(res.Skipped))
	case res.Done < res.Total:
		msg += " The others had finished, or changed, before their batch came."
	}
	if res.Requested > 0 {
		msg += fmt.Sprintf(" %s of them were running: they are told to stop, and end cancelled unless they succeed first.", num(res.Requested))
	}
	return msg
}

// bulkReason says why a bulk action stopped, for the page (the log gets
// the rest).
func bulkReason(err error) string {
	var fe *hopper.FieldError
	switch {
	case errors.As(err, &fe):
		return fe.Error() + "."
	case errors.Is(err, context.Canceled), errors.Is(err, hopper.ErrClosed):
		return "the server is stopping."
	}
	return "the job store failed; the server's log says why."
}

// bulkRefresh is how often, in seconds, the progress page of a running
// action reloads itself (a meta refresh: it works without the script).
const bulkRefresh = 2

// bulkPage shows the latest bulk action: its progress while it runs,
// then what it did.
func (h *handler) bulkPage(w http.ResponseWriter, r *http.Request) {
	p := &page{Title: "Bulk action", Nav: "jobs"}
	if t := h.bulks.last(); t != nil {
		v := t.snapshot()
		p.Data = &v
		if v.Running {
			p.Refresh = bulkRefresh
		}
	}
	h.render(w, r, http.StatusOK, "bulk", p)
}
