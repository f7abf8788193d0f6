package hopper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hopperq/hopper/internal/engine"
	"github.com/hopperq/hopper/internal/maintenance"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// Client is Hopper's entry point: it enqueues and inspects jobs, and once
// started it runs them on its worker pool. A Client is safe for concurrent
// use. Create one with NewClient, or Open for a store named by URL.
type Client struct {
	cfg     Config
	store   store.Store
	owned   bool // the client made the store and closes it
	engine  *engine.Engine
	maint   *maintenance.Services
	events  *broker
	reports *reports // the engine's transitions, after the client's own reports they follow (eventorder.go)
	starts  fence    // the reports of calls making jobs due, before a start's
	stops   fence    // the reports of cancels, before an attempt's end's

	mw middlewares // Config.Middleware and the kinds' (middleware.go)

	clock    func() time.Time   // the store's (store.Clock), else nil: time.Now
	txer     store.TxEnqueuer   // the store's, if it has one
	registry store.Registry     // the store's, if it has one (servers.go)
	qc       store.QueueControl // the store's, if it has one (queues.go)
	kc       store.KeyControl   // the store's, if it has one (keys.go)

	statsCache statsCache // for StatsCached

	wake   wakeHub // who waits for work: the engine, remote long polls (wake.go)
	remote remote  // the remote workers this client serves (remote.go)

	mu      sync.Mutex
	state   clientState
	stopped chan struct{}
}

type clientState uint8

const (
	clientNew clientState = iota
	clientStarted
	clientStopped
)

// NewClient returns a client for cfg. It starts nothing: call Start to run
// jobs. An invalid cfg returns a *FieldError naming the field.
func NewClient(cfg Config) (*Client, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cl := &Client{cfg: c, store: c.Store, events: newBroker(), stopped: make(chan struct{})}
	if cl.store == nil {
		cl.store, cl.owned = memstore.New(), true
	}
	cl.mw = newMiddlewares(&cl.cfg)
	cl.reports = newReports(cl.deliver)
	cl.starts, cl.stops = cl.reports.fence(), cl.reports.fence()
	if cl.cfg.WorkerID == "" {
		if id, ok := cl.store.(store.Identity); ok {
			cl.cfg.WorkerID = id.WorkerID()
		} else {
			cl.cfg.WorkerID = defaultWorkerID()
		}
	}
	var queues []string
	var limits map[string]int
	for name, q := range c.Queues {
		queues = append(queues, name)
		if q.MaxWorkers > 0 {
			if limits == nil {
				limits = make(map[string]int)
			}
			limits[name] = q.MaxWorkers
		}
	}
	sort.Strings(queues)
	if w, ok := cl.store.(store.Waker); ok {
		cl.wake.store = w.Wake() // fanned out by cl.wake.forward
	}
	cancels, _ := cl.store.(store.CancelWatcher)
	cl.remote.init(c.Remote.Key)
	if clk, ok := cl.store.(store.Clock); ok {
		cl.clock = clk.Now
	}
	leader, _ := cl.store.(store.Leader)
	var deaths <-chan struct{}
	if d, ok := cl.store.(store.DeathWatcher); ok {
		deaths = d.Deaths()
	}
	cl.txer, _ = cl.store.(store.TxEnqueuer)
	cl.registry, _ = cl.store.(store.Registry)
	cl.qc, _ = cl.store.(store.QueueControl)
	cl.kc, _ = cl.store.(store.KeyControl)
	if c.OnStoreCall != nil {
		t := timedStore{s: cl.store, on: c.OnStoreCall}
		cl.store = t
		if fc, ok := t.s.(store.FinishClaimer); ok {
			cl.store = timedFinishClaimer{t, fc}
		}
	}
	cl.engine = engine.New(engine.Config{
		Store:         cl.store,
		Resolve:       cl.resolve,
		Workers:       c.Concurrency,
		Queues:        queues,
		Kinds:         cl.runnable(),
		QueueLimits:   limits,
		Worker:        cl.cfg.WorkerID,
		LeaseDuration: c.LeaseDuration,
		Now:           cl.now,
		Logger:        c.Logger,
		Observe:       cl.observe,
		Observing:     cl.observing,
		Cancels:       cancels,
		ScheduleJobEnded: func() {
			if cl.maint != nil {
				cl.maint.WakeScheduler()
			}
		},
		Died: func() {
			if cl.maint != nil {
				cl.maint.NotifyDead()
			}
		},
	})
	cl.maint = maintenance.New(maintenance.Config{
		Store:              cl.store,
		Logger:             c.Logger,
		Now:                cl.now,
		Observe:            cl.observe,
		OnFire:             cl.fired,
		OnRescue:           cl.notify,
		CancelJob:          cl.Cancel,
		TerminateJob:       cl.Terminate,
		MakeJob:            cl.scheduledJob,
		RescueInterval:     c.RescueInterval,
		MaxCrashes:         c.MaxCrashes,
		CleanInterval:      cleanInterval,
		CompletedRetention: c.CompletedRetention,
		CancelledRetention: c.CancelledRetention,
		DeadRetention:      c.DeadRetention,
		DeadMaxCount:       c.DeadMaxCount,
		SchedulePoll:       schedulePoll,
		MonitorPoll:        monitorPoll,
		NotifyJob:          cl.notificationJob,
		NotifyKind:         NotifyKind,
		OnNotified:         cl.notify,
		NotifyDead:         c.NotifyDeadJobs,
		Deaths:             deaths,
		Leader:             leader,
		Holder:             cl.cfg.WorkerID,
		LeaderTTL:          leaderTTL,
		Registry:           cl.registry,
		Server:             cl.serverRecord(),
		ServerRetention:    serverRetention,
	})
	return cl, nil
}

func defaultWorkerID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// fired follows a schedule's tick that enqueued j: the ScheduleFired hooks,
// then a poke to the dispatcher.
func (c *Client) fired(sc *job.Schedule, j *job.Job) {
	if !c.mw.none {
		c.hookFired(sc, j)
	}
	c.notify()
}

// WorkerID returns the name this client's workers hold leases under.
func (c *Client) WorkerID() string { return c.cfg.WorkerID }

// Start starts the worker pool and the maintenance services (rescuer,
// retention cleaner, recurring-schedule firer), and records this client in
// the store as a server, renewed every few seconds (Servers). It returns
// at once; the client runs until Stop. The pool claims only jobs of the
// kinds registered in Config.Workers (and closures). Calling Start again
// does nothing; Start after Stop returns ErrClientStopped (an ErrClosed).
func (c *Client) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case clientStarted:
		return nil
	case clientStopped:
		return ErrClientStopped
	}
	c.state = clientStarted
	c.wake.forward(c.engine.Notify)
	c.maint.Start()
	c.engine.Start()
	return nil
}

// Stop shuts the client down gracefully: Enqueue and the other changes
// fail with ErrClientStopped (an ErrClosed) from now on, schedules stop
// firing, no further job is
// started, and running jobs may finish until ctx is done; those still
// running then have their context cancelled and go back to waiting without
// losing an attempt. Waiting jobs stay where they are. Once the workers
// have stopped, the client's record as a server is removed. Stop returns
// when every goroutine of the client has ended (store calls in flight are
// cancelled at most a few seconds after ctx is done), then closes the
// store if the client opened it. Calling Stop again waits for the first
// call.
//
// Pass Stop a context of its own, not one already cancelled by the signal
// that asked the program to stop: that would be a forceful stop. For a
// forceful stop, pass a context that is already done (or call StopNow).
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	first, started := c.state != clientStopped, c.state == clientStarted
	c.state = clientStopped
	c.mu.Unlock()
	if !first {
		<-c.stopped
		return nil
	}
	c.maint.Stop() // no tick fires once Stop has begun
	gone := func() {}
	if started {
		gone = c.maint.Leave() // listed, alive, while the workers finish
	}
	c.engine.Stop(ctx)
	c.wake.stop()
	c.remote.close()
	gone()
	c.reports.close()
	c.events.close()
	var err error
	if c.owned {
		err = c.store.Close()
	}
	close(c.stopped)
	return err
}

// StopNow stops the client forcefully: running jobs are cancelled at once
// and go back to waiting without losing an attempt.
func (c *Client) StopNow() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return c.Stop(ctx)
}

func (c *Client) closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state == clientStopped
}

// observe receives the transitions the engine and the maintenance services
// make. Each is delivered after the client's reports that must come before
// it (reports): a start after those of calls making jobs due (enqueues,
// reschedules, DLQ retries) in flight, an attempt's end and a rescue after
// those of cancels. It never waits for them: a report that must follow
// one in flight is held back, and delivered in order once that one is.
func (c *Client) observe(ev job.Event) {
	switch ev.Type {
	case job.EventStarted:
		c.reports.report(ev, &c.starts)
	case job.EventEnqueued: // a schedule's tick: a new job
		c.reports.report(ev, nil)
	default:
		c.reports.report(ev, &c.stops)
	}
}

// observing reports whether anyone receives the transitions the engine
// makes: a hook or a subscriber (or a waiter). While nobody does, the
// engine builds no events, and the client's calls take no tickets.
func (c *Client) observing() bool {
	return c.events.active() || c.cfg.OnDead != nil || c.cfg.OnEvent != nil || c.mw.dead
}

// deliver feeds a transition to the OnEvent and OnDead hooks, subscribers
// and waiters.
func (c *Client) deliver(ev job.Event) {
	if c.cfg.OnEvent != nil {
		c.cfg.OnEvent(ev)
	}
	if ev.Type == job.EventDead {
		c.maint.NotifyDead() // a rescue's, a schedule's supersede: the engine's and remote workers' call it themselves
		if c.cfg.OnDead != nil {
			c.cfg.OnDead(ev.Job)
		}
		if c.mw.dead {
			c.hookDead(ev.Job)
		}
	}
	c.events.publish(ev)
}

// reported reports whether client-side transitions need building: a hook
// or a subscriber wants them, or the logger writes debug lines.
func (c *Client) reported() bool {
	return c.cfg.OnEvent != nil || c.events.active() || c.cfg.Logger.Enabled(context.Background(), slog.LevelDebug)
}

// transition reports a transition the client itself made (enqueue, cancel,
// reschedule, DLQ retry): a debug log line and an event. The engine and the
// maintenance services report theirs.
func (c *Client) transition(ev job.Event) {
	ctx := context.Background()
	if c.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
		j := ev.Job
		c.cfg.Logger.LogAttrs(ctx, slog.LevelDebug, "job "+string(ev.Type),
			slog.Int64("job", int64(j.ID)), slog.String("kind", j.Kind), slog.String("queue", j.Queue),
			slog.Int("attempt", j.Attempt), slog.String("state", j.State.String()), slog.Time("run_at", j.RunAt))
	}
	c.deliver(ev)
}

// now is the client's clock: the store's when it has one (store.Clock: the
// database server's, on a store shared by several hosts), else this host's.
// Tests run the client in a synctest bubble.
func (c *Client) now() time.Time {
	if c.clock != nil {
		return c.clock()
	}
	return time.Now()
}
