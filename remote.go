package hopper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Remote workers are programs in any language that run jobs through a
// client — over the HTTP API's worker protocol (httpapi, docs/workers.md)
// — instead of in its worker pool: they register (RegisterWorker), take
// jobs with a long poll (FetchJobs), renew their leases (HeartbeatWorker)
// and report outcomes (CompleteJobs, FailJobs). Their jobs go through the
// store's Claim, Heartbeat, Finish and Rescue as the pool's do, so
// priorities, delays, retries, the dead-letter queue, cancellation, unique
// keys, schedules, events and rescue apply to them unchanged.

// Bounds of the remote-worker calls.
const (
	// MaxFetchWait bounds FetchParams.Wait: a long poll answers, with or
	// without jobs, within it.
	MaxFetchWait = 30 * time.Second
	// MaxFetchBatch bounds the jobs of one fetch and the leases of one
	// heartbeat, complete or fail call.
	MaxFetchBatch = 1000
	// MaxWorkerSlots bounds WorkerSpec.Slots.
	MaxWorkerSlots = 10_000
	// DefaultMaxRemoteWorkers and DefaultMaxLongPolls are RemoteOptions'
	// defaults.
	DefaultMaxRemoteWorkers = 10_000
	DefaultMaxLongPolls     = 1000
	// MaxRetryAfter bounds Failure.RetryAfter.
	MaxRetryAfter = 30 * 24 * time.Hour
)

// remoteForget is how long a remote worker's registration is kept without
// a request from it; after that it must register again.
const remoteForget = 10 * time.Minute

// RemoteOptions configure the remote workers a client serves (Config.Remote).
type RemoteOptions struct {
	// Key signs the lease tokens (at least 32 bytes). Default: a random
	// key of this process. Servers that share a store behind one address
	// must share a Key, or a token one of them gave is refused (409) by
	// the others.
	Key []byte
	// MaxWorkers bounds the remote workers registered at once (default
	// DefaultMaxRemoteWorkers); a registration beyond it fails with
	// ErrTooManyWorkers.
	MaxWorkers int
	// MaxLongPolls bounds the fetches waiting for work at once (default
	// DefaultMaxLongPolls); a fetch beyond it fails with ErrBusy.
	MaxLongPolls int
	// OnRefused, if set, is called with the worker and the jobs of each
	// remote outcome refused because its lease was lost (stale or foreign
	// tokens: ErrLeaseLost, HTTP 409) — a partitioned worker's late
	// completion, say — after the refusal is logged. It is called
	// synchronously and must be fast (metrics.Metrics.OnRemoteRefused).
	OnRefused func(worker string, jobs []ID)
}

// Errors of the remote-worker calls.
var (
	// ErrUnknownWorker: no remote worker of that ID is registered with
	// this client (never, deregistered, forgotten after remoteForget, or
	// registered with another server, or by another token): register
	// again.
	ErrUnknownWorker = errors.New("unknown worker: register it (again)")
	// ErrBusy: too many fetches wait for work at once (RemoteOptions.MaxLongPolls).
	ErrBusy = errors.New("too many long polls wait at once: try again shortly")
	// ErrTooManyWorkers: RemoteOptions.MaxWorkers are registered.
	ErrTooManyWorkers = errors.New("too many remote workers registered")
)

// WorkerSpec describes a remote worker as it registers.
type WorkerSpec struct {
	// Kinds are the kinds it runs: at least one, none of them a kind this
	// client runs itself (such as the hopper command's exec and http),
	// and, if Config.ExternalKinds is set, each listed there.
	Kinds []string `json:"kinds"`
	// Queues are the queues it works (empty: every queue).
	Queues []string `json:"queues,omitempty"`
	// Slots is how many jobs it runs at once (1 to MaxWorkerSlots): a
	// fetch returns at most that many.
	Slots int `json:"slots"`
	// Name, Host, PID and Version say who it is, for people (servers
	// list, dashboard): a name of its own, its host, its process and the
	// version of its client library. All optional.
	Name    string `json:"name,omitempty"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Version string `json:"version,omitempty"`
}

// RemoteWorker is a registered remote worker, as this client knows it.
type RemoteWorker struct {
	// ID names it in leases (the Worker of its jobs) and in the servers
	// list: store.RemoteWorkerPrefix, then random.
	ID string `json:"id"`
	WorkerSpec
	// Owner is the name of the token that registered it ("" without
	// tokens): only requests with that token may act as it.
	Owner        string    `json:"owner,omitempty"`
	RegisteredAt time.Time `json:"registered_at"`
	SeenAt       time.Time `json:"seen_at"` // its latest request
	// Quiet: it was asked to take no more jobs (QuietWorker); Stop: also
	// to stop (StopWorker). It learns both at its next heartbeat or fetch.
	Quiet bool `json:"quiet"`
	Stop  bool `json:"stop"`
	// LeaseDuration is the lease each of its jobs gets, renewed by each
	// heartbeat; HeartbeatInterval is how often it must send one.
	LeaseDuration     time.Duration `json:"lease_duration"`
	HeartbeatInterval time.Duration `json:"heartbeat_interval"`
}

// remoteWorker is the state of one registered worker.
type remoteWorker struct {
	info     RemoteWorker
	beat     time.Time     // its record's last renewal in the store's registry
	asked    chan struct{} // closed when it is asked to go quiet or stop
	askedSet bool
}

// remote is a client's table of remote workers and leases.
type remote struct {
	mu      sync.Mutex
	workers map[string]*remoteWorker
	leases  map[store.Lease]*job.Job // the jobs fetched, until their outcome: for events and outcomes
	swept   time.Time
	polls   int           // fetches waiting now
	done    chan struct{} // closed by close: the client stopped
	key     []byte
}

func (r *remote) init(key []byte) {
	r.key = key
	if len(r.key) == 0 {
		r.key = make([]byte, 32)
		_, _ = rand.Read(r.key)
	}
	r.workers = make(map[string]*remoteWorker)
	r.leases = make(map[store.Lease]*job.Job)
	r.done = make(chan struct{})
}

// close wakes every long poll: the client stops.
func (r *remote) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
	default:
		close(r.done)
	}
}

// heartbeatInterval is how often a remote worker beats: a third of the
// lease, and often enough that its record in the servers list stays alive.
func (c *Client) heartbeatInterval() time.Duration {
	return min(c.cfg.LeaseDuration/3, serverTTL/3)
}

// RegisterWorker registers a remote worker described by spec, owned by the
// token named owner, and returns it with its ID. Its record appears in
// Servers (with store.RemoteWorkerPrefix) while it sends requests. A bad
// spec is a *FieldError naming the field ("kinds", "slots", …).
func (c *Client) RegisterWorker(ctx context.Context, spec WorkerSpec, owner string) (RemoteWorker, error) {
	if c.closed() {
		return RemoteWorker{}, ErrClientStopped
	}
	if err := c.checkSpec(&spec); err != nil {
		return RemoteWorker{}, err
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	now := c.now()
	w := &remoteWorker{info: RemoteWorker{
		ID: store.RemoteWorkerPrefix + hex.EncodeToString(b[:]), WorkerSpec: spec, Owner: owner,
		RegisteredAt: now, SeenAt: now,
		LeaseDuration: c.cfg.LeaseDuration, HeartbeatInterval: c.heartbeatInterval(),
	}, asked: make(chan struct{})}
	r := &c.remote
	r.mu.Lock()
	r.forgetIdle(now)
	if len(r.workers) >= cmpOr(c.cfg.Remote.MaxWorkers, DefaultMaxRemoteWorkers) {
		r.mu.Unlock()
		return RemoteWorker{}, ErrTooManyWorkers
	}
	r.workers[w.info.ID] = w
	r.mu.Unlock()
	if err := c.renewRecord(ctx, w, now, true); err != nil {
		r.mu.Lock()
		delete(r.workers, w.info.ID)
		r.mu.Unlock()
		return RemoteWorker{}, err
	}
	c.cfg.Logger.Info("remote worker registered", "worker", w.info.ID, "name", spec.Name, "host", spec.Host,
		"kinds", spec.Kinds, "queues", spec.Queues, "slots", spec.Slots, "token", owner)
	return w.info, nil
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// checkSpec validates spec, sorting and deduplicating its lists.
func (c *Client) checkSpec(s *WorkerSpec) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if len(s.Kinds) == 0 {
		return bad("kinds", "give the kinds this worker runs")
	}
	if len(s.Kinds) > 1000 || len(s.Queues) > 1000 {
		return bad("kinds", "at most 1000 kinds and 1000 queues")
	}
	own := c.runnable()
	for i, k := range s.Kinds {
		field := fmt.Sprintf("kinds[%d]", i)
		if err := job.CheckName(field, k); err != nil {
			return err
		}
		if slices.Contains(own, k) {
			return bad(field, "%q is a kind this server runs itself: remote workers cannot take its jobs", k)
		}
		if len(c.cfg.ExternalKinds) > 0 && !slices.Contains(c.cfg.ExternalKinds, k) {
			return bad(field, "%q is not one of the server's external kinds %s (hopper serve --external-kinds)", k, quoteList(c.cfg.ExternalKinds))
		}
	}
	for i, q := range s.Queues {
		if err := job.CheckName(fmt.Sprintf("queues[%d]", i), q); err != nil {
			return err
		}
	}
	s.Kinds, s.Queues = sortedSet(s.Kinds), sortedSet(s.Queues)
	switch {
	case s.Slots < 1 || s.Slots > MaxWorkerSlots:
		return bad("slots", "must be between 1 and %d, got %d", MaxWorkerSlots, s.Slots)
	case s.PID < 0:
		return bad("pid", "must not be negative")
	}
	for _, f := range []struct{ name, v string }{{"name", s.Name}, {"host", s.Host}, {"version", s.Version}} {
		if f.v != "" {
			if err := job.CheckName(f.name, f.v); err != nil {
				return err
			}
		}
	}
	return nil
}

func sortedSet(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	out := slices.Clone(ss)
	sort.Strings(out)
	return slices.Compact(out)
}

// worker returns the registered worker id if owner registered it, marking
// it seen at now. A worker another token registered is unknown to owner.
func (r *remote) worker(id, owner string, now time.Time) (*remoteWorker, error) {
	w, err := r.lookup(id, owner, now)
	if w == nil && err == nil {
		err = fmt.Errorf("worker %q: %w", id, ErrUnknownWorker)
	}
	return w, err
}

// lookup is worker, but a worker this client does not know — registered
// with another server sharing the store, or forgotten — is (nil, nil)
// when its ID is a remote worker's: its leases may still be renewed and
// finished, as the tokens prove they are its.
func (r *remote) lookup(id, owner string, now time.Time) (*remoteWorker, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.workers[id]
	switch {
	case w == nil && strings.HasPrefix(id, store.RemoteWorkerPrefix):
		return nil, nil
	case w == nil || w.info.Owner != owner:
		return nil, fmt.Errorf("worker %q: %w", id, ErrUnknownWorker)
	}
	w.info.SeenAt = now
	return w, nil
}

// forgetIdle drops the workers not seen for remoteForget, and the leases
// nobody renewed for as long. Under r.mu.
func (r *remote) forgetIdle(now time.Time) {
	if now.Sub(r.swept) < time.Minute {
		return
	}
	r.swept = now
	for id, w := range r.workers {
		if now.Sub(w.info.SeenAt) > remoteForget {
			delete(r.workers, id)
		}
	}
	for l, j := range r.leases {
		if now.Sub(j.LeaseUntil) > remoteForget {
			delete(r.leases, l)
		}
	}
}

// renewRecord records w in the store's registry of servers if its record
// is older than a third of serverTTL (always with force).
func (c *Client) renewRecord(ctx context.Context, w *remoteWorker, now time.Time, force bool) error {
	if c.registry == nil {
		return nil
	}
	c.remote.mu.Lock()
	due := force || now.Sub(w.beat) >= serverTTL/3
	if due {
		w.beat = now
	}
	info := w.info
	c.remote.mu.Unlock()
	if !due {
		return nil
	}
	host := info.Host
	if info.Name != "" {
		host = info.Name + "@" + host
	}
	err := c.registry.RegisterServer(ctx, store.RegisterServerParams{Now: now, Server: store.Server{
		ID: info.ID, Host: host, PID: info.PID, Version: info.Version, Workers: info.Slots, StartedAt: info.RegisteredAt,
	}})
	if err != nil {
		return fmt.Errorf("register worker %s: %w", info.ID, err)
	}
	return nil
}

// DeregisterWorker removes the remote worker id, which owner registered,
// from this client and from the servers list. Jobs it still holds stay
// leased to it until their leases expire and the rescuer gives them back.
func (c *Client) DeregisterWorker(ctx context.Context, id, owner string) error {
	if c.closed() {
		return ErrClientStopped
	}
	if _, err := c.remote.worker(id, owner, c.now()); err != nil {
		return err
	}
	c.remote.mu.Lock()
	delete(c.remote.workers, id)
	c.remote.mu.Unlock()
	if c.registry != nil {
		if err := c.registry.RemoveServer(ctx, id); err != nil {
			return fmt.Errorf("deregister worker %s: %w", id, err)
		}
	}
	c.cfg.Logger.Info("remote worker deregistered", "worker", id)
	return nil
}

// QuietWorker asks the remote worker id to take no more jobs (for a
// deploy): its fetches answer at once with none, and its next heartbeat
// says quiet. With stop it is also asked to stop once its running jobs
// end. ErrUnknownWorker if this client has no such worker.
func (c *Client) QuietWorker(id string, stop bool) (RemoteWorker, error) {
	if c.closed() {
		return RemoteWorker{}, ErrClientStopped
	}
	r := &c.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.workers[id]
	if w == nil {
		return RemoteWorker{}, fmt.Errorf("worker %q: %w", id, ErrUnknownWorker)
	}
	w.info.Quiet = true
	w.info.Stop = w.info.Stop || stop
	if !w.askedSet {
		w.askedSet = true
		close(w.asked) // a waiting fetch answers now
	}
	what := "go quiet"
	if w.info.Stop {
		what = "stop"
	}
	c.cfg.Logger.Info("remote worker asked to "+what, "worker", id)
	return w.info, nil
}

// RemoteWorkerName returns the name the remote worker id registered with
// (WorkerSpec.Name) and whether this client knows the worker. It is cheap:
// metrics label a remote worker's jobs with it.
func (c *Client) RemoteWorkerName(id string) (string, bool) {
	r := &c.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.workers[id]
	if w == nil {
		return "", false
	}
	return w.info.Name, true
}

// RemoteWorkers lists the remote workers registered with this client,
// by ID; ErrClientStopped after Stop.
func (c *Client) RemoteWorkers() ([]RemoteWorker, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	r := &c.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RemoteWorker, 0, len(r.workers))
	for _, w := range r.workers {
		out = append(out, w.info)
	}
	slices.SortFunc(out, func(a, b RemoteWorker) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
