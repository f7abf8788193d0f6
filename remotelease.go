package hopper

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/internal/engine"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// A lease token names one claim of a job a remote worker holds:
// "JOB.CLAIM.MAC", CLAIM the job's claim number (job.Job.Claims, which
// every claim raises, so no two claims of a job share one) and MAC the
// first 16 bytes of HMAC-SHA256 under the client's key
// (RemoteOptions.Key) of the job ID, the claim and the worker's ID,
// base64url. It cannot be made without the key, and it is valid only for
// the worker it was given to and for that claim: another worker's token,
// or one of this worker's for a claim that has ended — even if the same
// worker fetched the job again since, at the same attempt number after a
// snooze — is refused. The MAC's text starts with "claim|", which the
// tokens of earlier versions (named by attempt) did not: those are
// refused, never read as naming a claim.

// LeaseError is why lease tokens were refused: each is foreign (not made
// for this worker, or not made by this server's key) or stale (the job no
// longer runs that attempt under this worker: it finished, was rescued
// after the lease expired, or was deleted). Nothing was changed. It
// matches ErrLeaseLost with errors.Is.
type LeaseError struct {
	Tokens []string // the refused tokens
	Jobs   []ID     // their jobs (0 for a token that names none)
}

// Error implements error.
func (e *LeaseError) Error() string {
	ids := make([]string, len(e.Jobs))
	for i, id := range e.Jobs {
		ids[i] = strconv.FormatInt(int64(id), 10)
	}
	return fmt.Sprintf("lease lost or not this worker's (jobs %s): nothing was changed", strings.Join(ids, ", "))
}

// Is reports whether target is ErrLeaseLost.
func (e *LeaseError) Is(target error) bool { return target == ErrLeaseLost }

func (c *Client) mac(id ID, claim int64, worker string) string {
	m := hmac.New(sha256.New, c.remote.key)
	fmt.Fprintf(m, "claim|%d|%d|%s", id, claim, worker)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:16])
}

// leaseToken returns the token of claim of job id held by worker.
func (c *Client) leaseToken(id ID, claim int64, worker string) string {
	return fmt.Sprintf("%d.%d.%s", id, claim, c.mac(id, claim, worker))
}

// parseTokens reads the tokens of field (field[i]) for worker: a token
// that is not one in form is a *FieldError; one whose MAC is wrong is in
// the *LeaseError; a token given twice is a *FieldError.
func (c *Client) parseTokens(field string, tokens []string, worker string) ([]store.Lease, error) {
	if len(tokens) > MaxFetchBatch {
		return nil, &FieldError{Field: field, Reason: fmt.Sprintf("at most %d leases per call, got %d", MaxFetchBatch, len(tokens))}
	}
	out := make([]store.Lease, len(tokens))
	seen := make(map[store.Lease]bool, len(tokens))
	var lost LeaseError
	for i, t := range tokens {
		f := fmt.Sprintf("%s[%d]", field, i)
		parts := strings.Split(t, ".")
		var id, claim int64
		var err error
		if len(parts) == 3 {
			id, err = strconv.ParseInt(parts[0], 10, 64)
			if err == nil {
				claim, err = strconv.ParseInt(parts[1], 10, 64)
			}
		}
		if len(parts) != 3 || err != nil || id <= 0 || claim <= 0 {
			return nil, &FieldError{Field: f, Reason: "not a lease token (JOB.CLAIM.MAC, as fetch gave it)"}
		}
		l := store.Lease{ID: ID(id), Claim: claim}
		if seen[l] {
			return nil, &FieldError{Field: f, Reason: fmt.Sprintf("job %d's lease is given twice", id)}
		}
		seen[l] = true
		if !hmac.Equal([]byte(parts[2]), []byte(c.mac(l.ID, l.Claim, worker))) {
			lost.Tokens, lost.Jobs = append(lost.Tokens, t), append(lost.Jobs, l.ID)
		}
		out[i] = l
	}
	if len(lost.Tokens) > 0 {
		return nil, &lost
	}
	return out, nil
}

// FetchParams are the arguments of FetchJobs.
type FetchParams struct {
	Worker string // the worker's ID (RegisterWorker)
	Owner  string // the name of the token making the request
	// Max is how many jobs it takes at most: 1 to its slots (and
	// MaxFetchBatch).
	Max int
	// Wait is how long to wait for a job when none is ready (0: answer at
	// once; at most MaxFetchWait).
	Wait time.Duration
}

// Lease is one job a remote worker holds.
type Lease struct {
	Job *Job `json:"job"`
	// Token names the lease in heartbeat, complete and fail calls.
	Token string `json:"token"`
}

// FetchResult is what FetchJobs returns.
type FetchResult struct {
	Leases []Lease `json:"leases"`
	// Quiet and Stop: the worker was asked to take no more jobs, or to
	// stop (QuietWorker); no job was given.
	Quiet bool `json:"quiet"`
	Stop  bool `json:"stop"`
}

// FetchJobs claims up to p.Max jobs of the worker's kinds and queues, in
// the store's order (priority, run-at, ID), each leased to it for the
// client's LeaseDuration. With none ready it waits up to p.Wait, and
// answers as soon as jobs are claimable: it is woken by this client's own
// enqueues, reschedules and schedule ticks, by the store's wake-ups for
// other processes' (store.Waker), and by the run-at of the earliest
// scheduled job — never by polling. A worker asked to go quiet or stop
// gets no job. Errors: ErrUnknownWorker, ErrBusy when
// RemoteOptions.MaxLongPolls fetches wait already, a *FieldError for a
// bad Max or Wait, ErrClientStopped.
func (c *Client) FetchJobs(ctx context.Context, p FetchParams) (FetchResult, error) {
	if c.closed() {
		return FetchResult{}, ErrClientStopped
	}
	now := c.now()
	w, err := c.remote.worker(p.Worker, p.Owner, now)
	if err != nil {
		return FetchResult{}, err
	}
	c.remote.mu.Lock()
	info, asked := w.info, w.asked
	c.remote.mu.Unlock()
	switch {
	case p.Max < 1 || p.Max > info.Slots || p.Max > MaxFetchBatch:
		return FetchResult{}, &FieldError{Field: "max", Reason: fmt.Sprintf("must be between 1 and the worker's slots (%d, at most %d), got %d", info.Slots, MaxFetchBatch, p.Max)}
	case p.Wait < 0 || p.Wait > MaxFetchWait:
		return FetchResult{}, &FieldError{Field: "wait", Reason: fmt.Sprintf("must be between 0 and %s, got %s", MaxFetchWait, p.Wait)}
	}
	if err := c.renewRecord(ctx, w, now, false); err != nil {
		return FetchResult{}, err
	}
	if info.Quiet {
		return FetchResult{Leases: []Lease{}, Quiet: true, Stop: info.Stop}, nil
	}
	if p.Wait > 0 {
		r := &c.remote
		r.mu.Lock()
		if r.polls >= cmpOr(c.cfg.Remote.MaxLongPolls, DefaultMaxLongPolls) {
			r.mu.Unlock()
			return FetchResult{}, ErrBusy
		}
		r.polls++
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.polls--
			r.mu.Unlock()
		}()
		c.wake.forward(c.engine.Notify)
	}
	deadline := time.Now().Add(p.Wait)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		woken := c.wake.wait() // before the claim: a wake-up during it is not missed
		now = c.now()
		res, err := c.store.Claim(ctx, store.ClaimParams{
			Now: now, Limit: p.Max, Worker: info.ID, LeaseUntil: now.Add(c.cfg.LeaseDuration),
			Queues: info.Queues, Kinds: info.Kinds,
		})
		if err != nil {
			return FetchResult{}, fmt.Errorf("fetch jobs: %w", err)
		}
		if len(res.Jobs) > 0 {
			return FetchResult{Leases: c.leased(res.Jobs, info.ID, now)}, nil
		}
		if len(res.Dropped) > 0 {
			continue // dropped by a queue's rate: there may be more behind
		}
		left := time.Until(deadline)
		if left <= 0 {
			return FetchResult{Leases: []Lease{}}, nil
		}
		if next := engine.WakeAt(res); !next.IsZero() {
			left = min(left, max(next.Sub(now), 0))
		}
		timer.Reset(left)
		select {
		case <-woken:
		case <-timer.C:
		case <-asked:
			c.remote.mu.Lock()
			info = w.info
			c.remote.mu.Unlock()
			return FetchResult{Leases: []Lease{}, Quiet: info.Quiet, Stop: info.Stop}, nil
		case <-c.remote.done:
			return FetchResult{}, ErrClientStopped
		case <-ctx.Done():
			return FetchResult{}, ctx.Err()
		}
		timer.Stop()
	}
}

// leased records the jobs a worker claimed, reports their starts and
// returns their leases.
func (c *Client) leased(jobs []*job.Job, worker string, now time.Time) []Lease {
	out := make([]Lease, len(jobs))
	observing := c.observing()
	debug := c.cfg.Logger.Enabled(context.Background(), slog.LevelDebug)
	c.remote.mu.Lock()
	for i, j := range jobs {
		c.remote.leases[store.Lease{ID: j.ID, Claim: j.Claims}] = j.Clone()
		out[i] = Lease{Job: j, Token: c.leaseToken(j.ID, j.Claims, worker)}
	}
	c.remote.forgetIdle(now)
	c.remote.mu.Unlock()
	for _, j := range jobs {
		if debug {
			c.logRemote(job.EventStarted, j, 0, "")
		}
		if observing {
			c.observe(Event{Type: job.EventStarted, Job: j.Clone(), At: now})
		}
	}
	return out
}

// logRemote writes the line of a remote job's transition, as the pool
// does for its own.
func (c *Client) logRemote(t job.EventType, j *job.Job, dur time.Duration, errText string) {
	level := slog.LevelDebug
	switch t {
	case job.EventRetrying:
		level = slog.LevelWarn
	case job.EventDead:
		level = slog.LevelError
	}
	ctx := context.Background()
	if !c.cfg.Logger.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{slog.Int64("job", int64(j.ID)), slog.String("kind", j.Kind), slog.String("queue", j.Queue),
		slog.Int("attempt", j.Attempt), slog.String("worker", j.Worker)}
	if t != job.EventStarted {
		attrs = append(attrs, slog.Duration("duration", dur))
	}
	if errText != "" {
		attrs = append(attrs, slog.String("error", errText))
	}
	c.cfg.Logger.LogAttrs(ctx, level, "job "+string(t), attrs...)
}

// HeartbeatResult is what HeartbeatWorker returns.
type HeartbeatResult struct {
	// Cancel lists the jobs among those renewed whose cancellation was
	// requested: the worker should stop their handlers and fail them (they
	// end cancelled).
	Cancel []ID `json:"cancel"`
	// Lost lists the tokens given that were not renewed: stale (the
	// attempt ended, or was rescued after its lease expired) or foreign.
	// Their handlers should stop: their outcomes will be refused.
	Lost []string `json:"lost"`
	// LeaseUntil is when the renewed leases expire unless renewed again.
	LeaseUntil time.Time `json:"lease_until"`
	// Quiet and Stop: the worker is asked to take no more jobs, or to
	// stop once its running jobs have ended.
	Quiet bool `json:"quiet"`
	Stop  bool `json:"stop"`
}

// HeartbeatWorker renews the leases named by tokens, held by worker, for
// another LeaseDuration, and keeps the worker's record in the servers list
// alive (send one every RemoteWorker.HeartbeatInterval, with or without
// leases). A stale or foreign token renews nothing: it is listed in Lost.
// An unknown worker (registered with another server sharing the store)
// still has its leases renewed, but is told nothing of quiet or stop.
func (c *Client) HeartbeatWorker(ctx context.Context, worker, owner string, tokens []string) (HeartbeatResult, error) {
	if c.closed() {
		return HeartbeatResult{}, ErrClientStopped
	}
	now := c.now()
	out := HeartbeatResult{Cancel: []ID{}, Lost: []string{}}
	w, err := c.remote.lookup(worker, owner, now)
	if err != nil {
		return HeartbeatResult{}, err
	}
	if w != nil {
		if err := c.renewRecord(ctx, w, now, false); err != nil {
			return HeartbeatResult{}, err
		}
		c.remote.mu.Lock()
		out.Quiet, out.Stop = w.info.Quiet, w.info.Stop
		c.remote.mu.Unlock()
	}
	ls, err := c.parseTokens("tokens", tokens, worker)
	var le *LeaseError
	if errors.As(err, &le) {
		// Renew the others; the foreign ones are lost.
		foreign := make(map[string]bool, len(le.Tokens))
		for _, t := range le.Tokens {
			foreign[t] = true
		}
		var keep []string
		for _, t := range tokens {
			if !foreign[t] {
				keep = append(keep, t)
			}
		}
		ls, err = c.parseTokens("tokens", keep, worker)
		tokens = keep
		out.Lost = append(out.Lost, le.Tokens...)
	}
	if err != nil {
		return HeartbeatResult{}, err
	}
	until := now.Add(c.cfg.LeaseDuration)
	out.LeaseUntil = until
	if len(ls) == 0 {
		return out, nil
	}
	res, err := c.store.Heartbeat(ctx, store.HeartbeatParams{Now: now, Worker: worker, Jobs: ls, LeaseUntil: until})
	if err != nil {
		return HeartbeatResult{}, fmt.Errorf("heartbeat: %w", err)
	}
	lost := make(map[store.Lease]bool, len(res.Lost))
	for _, l := range res.Lost {
		lost[l] = true
	}
	var held []store.Lease // renewed
	var heldTokens []string
	c.remote.mu.Lock()
	for i, l := range ls {
		if lost[l] {
			out.Lost = append(out.Lost, tokens[i])
			delete(c.remote.leases, l)
			continue
		}
		held, heldTokens = append(held, l), append(heldTokens, tokens[i])
		if j := c.remote.leases[l]; j != nil {
			j.LeaseUntil = until
		}
	}
	c.remote.mu.Unlock()
	ended, err := c.timeOut(ctx, now, held, heldTokens, res.Cancel)
	if err != nil {
		return HeartbeatResult{}, err
	}
	for i, l := range held {
		if ended[l.ID] {
			out.Lost = append(out.Lost, heldTokens[i])
		}
	}
	for _, id := range res.Cancel {
		if !ended[id] {
			out.Cancel = append(out.Cancel, id)
		}
	}
	return out, nil
}

// timeOut ends, as failed attempts, the leases among ls (just renewed,
// named by tokens) whose jobs have run past their timeouts — the job's
// own, else its kind's, else the client's default, as a Go handler's —
// and returns the IDs of the jobs it ended. A remote handler that hangs while its client
// keeps heartbeating thus loses its lease at the first heartbeat after its
// timeout: its job is retried (or dead-lettered) as a Go handler's timeout
// is, and the client is told the lease is lost. cancelled lists the jobs whose
// cancel was requested (they end cancelled).
func (c *Client) timeOut(ctx context.Context, now time.Time, ls []store.Lease, tokens []string, cancelled []ID) (map[ID]bool, error) {
	if len(ls) == 0 {
		return nil, nil
	}
	jobs, err := c.remoteJobs(ctx, ls)
	if err != nil {
		return nil, fmt.Errorf("heartbeat: %w", err)
	}
	var (
		late   []store.Lease
		toks   []string
		ended  []*job.Job
		outs   []store.Outcome
		cancel map[ID]bool
	)
	for i, j := range jobs {
		set := c.settingsOf(c.cfg.Workers.lookup(j.Kind), j)
		ran := now.Sub(j.StartedAt)
		if set.Timeout <= 0 || j.StartedAt.IsZero() || ran < set.Timeout {
			continue
		}
		if cancel == nil {
			cancel = make(map[ID]bool, len(cancelled))
			for _, id := range cancelled {
				cancel[id] = true
			}
		}
		j.CancelRequested = j.CancelRequested || cancel[j.ID]
		err := fmt.Errorf("timed out after %s: the server ended the remote lease, its outcome not reported by then", set.Timeout)
		o := engine.Decide(j, set, nil, err, ran, now)
		o.Claim = ls[i].Claim // the claim just renewed
		late, toks, ended, outs = append(late, ls[i]), append(toks, tokens[i]), append(ended, j), append(outs, o)
	}
	if len(late) == 0 {
		return nil, nil
	}
	// An outcome the store did not apply means the attempt ended
	// otherwise meanwhile: its lease is lost all the same.
	if _, err := c.recordRemote(ctx, now, late, toks, ended, outs); err != nil && !errors.Is(err, ErrLeaseLost) {
		return nil, err
	}
	done := make(map[ID]bool, len(late))
	for _, l := range late {
		done[l.ID] = true
	}
	return done, nil
}

// Completion is the successful end of a remote attempt.
type Completion struct {
	Token  string          `json:"token"`
	Result json.RawMessage `json:"result,omitempty"` // JSON, at most job.MaxResultSize bytes
	// Output, if set, is what the attempt wrote, kept with it as a Go
	// handler's is (Output): cut to the client's caps.
	Output *RemoteOutput `json:"output,omitempty"`
}

// RemoteOutput is what a remote attempt wrote: its standard output and
// error, each cut to the client's OutputLimit for the job's kind, and its
// log lines, cut as Logger's are (LogLines lines, LogBytes bytes); the
// bytes cut are counted in each Stream's Size.
type RemoteOutput struct {
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	Log    string `json:"log,omitempty"`
}

// remoteOutput returns o as an attempt's output of a job of kind, packed; nil
// if o is nil or empty.
func (c *Client) remoteOutput(o *RemoteOutput, kind string) *store.PackedOutput {
	if o == nil {
		return nil
	}
	limit := c.outputLimit(kind)
	stream := func(s string, n int) job.Stream {
		return job.Stream{Data: []byte(s[:min(len(s), n)]), Size: int64(len(s))}
	}
	logText := o.Log
	if n := strings.Count(logText, "\n"); n > LogLines { // keep the first LogLines lines
		at := 0
		for range LogLines {
			at += strings.IndexByte(logText[at:], '\n') + 1
		}
		logText = logText[:at]
	}
	logs := stream(logText, LogBytes)
	logs.Size = int64(len(o.Log))
	return store.PackOutput(&job.Output{Stdout: stream(o.Stdout, limit), Stderr: stream(o.Stderr, limit), Log: logs})
}

// Failure is the failed end of a remote attempt.
type Failure struct {
	Token string `json:"token"`
	// Error says what went wrong (required; cut to job.MaxErrorSize).
	Error string `json:"error"`
	// Permanent sends the job to the dead-letter queue whatever attempts
	// remain; otherwise it is retried by its retry policy while attempts
	// remain.
	Permanent bool `json:"permanent,omitempty"`
	// RetryAfter, if set, is the delay before the retry instead of the
	// policy's (at most MaxRetryAfter).
	RetryAfter time.Duration `json:"retry_after,omitempty"`
	// Result, if set, is kept with the failed attempt (JSON).
	Result json.RawMessage `json:"result,omitempty"`
	// Output, if set, is what the attempt wrote (see Completion.Output).
	Output *RemoteOutput `json:"output,omitempty"`
}

// Finished is the state a job reached from a remote outcome.
type Finished struct {
	ID    ID    `json:"id"`
	State State `json:"state"` // completed, retrying, dead or cancelled (a cancel requested wins over a failure)
}

// CompleteJobs records the successful ends of attempts that worker holds,
// all or none: if any token is stale or foreign the error is a
// *LeaseError (errors.Is ErrLeaseLost) and nothing changes. The leases are
// checked — and renewed — in the store before the outcomes are written, so
// an outcome is applied only to a job still running that attempt under
// this worker.
func (c *Client) CompleteJobs(ctx context.Context, worker, owner string, cs []Completion) ([]Finished, error) {
	tokens := make([]string, len(cs))
	for i, x := range cs {
		tokens[i] = x.Token
		if len(x.Result) > 0 {
			field := fmt.Sprintf("completions[%d].result", i)
			if len(x.Result) > job.MaxResultSize {
				return nil, &FieldError{Field: field, Reason: fmt.Sprintf("%d bytes, more than the limit of %d", len(x.Result), job.MaxResultSize)}
			}
			if !json.Valid(x.Result) {
				return nil, &FieldError{Field: field, Reason: "not valid JSON"}
			}
		}
	}
	return c.finishRemote(ctx, worker, owner, "completions", tokens, func(i int, j *job.Job, o *store.Outcome, now time.Time) {
		o.State, o.Result = job.StateCompleted, cs[i].Result
		o.Output = c.remoteOutput(cs[i].Output, j.Kind)
	})
}

// FailJobs records the failed ends of attempts that worker holds, all or
// none, as CompleteJobs does: each job is retried (after Failure.RetryAfter
// or its retry policy's backoff) while attempts remain and the failure is
// not Permanent, else it goes to the dead-letter queue; a job whose
// cancellation was requested ends cancelled.
func (c *Client) FailJobs(ctx context.Context, worker, owner string, fs []Failure) ([]Finished, error) {
	tokens := make([]string, len(fs))
	for i, f := range fs {
		tokens[i] = f.Token
		field := fmt.Sprintf("failures[%d]", i)
		switch {
		case strings.TrimSpace(f.Error) == "":
			return nil, &FieldError{Field: field + ".error", Reason: "say what went wrong"}
		case f.RetryAfter < 0 || f.RetryAfter > MaxRetryAfter:
			return nil, &FieldError{Field: field + ".retry_after", Reason: fmt.Sprintf("must be between 0 and %s", MaxRetryAfter)}
		}
		if err := checkResult(field+".result", f.Result); err != nil {
			return nil, err
		}
	}
	return c.finishRemote(ctx, worker, owner, "failures", tokens, func(i int, j *job.Job, o *store.Outcome, now time.Time) {
		f := fs[i]
		o.Output = c.remoteOutput(f.Output, j.Kind)
		o.Error = cutError(f.Error)
		o.Record.Error, o.Record.Result = o.Error, f.Result
		switch {
		case j.CancelRequested:
			o.State = job.StateCancelled
		case f.Permanent, j.Attempt >= j.MaxAttempts:
			o.State = job.StateDead
		default:
			o.State = job.StateRetrying
			d := f.RetryAfter
			if d == 0 {
				pol := c.optionsOf(c.cfg.Workers.lookup(j.Kind), &EnqueueOptions{Retry: j.Retry}).Retry
				d = pol.Delay(j.Attempt, prevBackoff(j), rand.Float64())
			}
			o.RunAt = now.Add(d)
			o.Record.Backoff = d
		}
	})
}

// checkResult checks a result kept with a failed or snoozed attempt: JSON,
// at most job.MaxResultSize bytes.
func checkResult(field string, r json.RawMessage) error {
	switch {
	case len(r) > job.MaxResultSize:
		return &FieldError{Field: field, Reason: fmt.Sprintf("more than the limit of %d bytes", job.MaxResultSize)}
	case len(r) > 0 && !json.Valid(r):
		return &FieldError{Field: field, Reason: "not valid JSON"}
	}
	return nil
}

// cutError cuts s to job.MaxErrorSize bytes on a character boundary.
func cutError(s string) string {
	if len(s) <= job.MaxErrorSize {
		return s
	}
	const mark = "… (truncated)"
	cut := job.MaxErrorSize - len(mark)
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + mark
}

func prevBackoff(j *job.Job) time.Duration {
	for i := len(j.Attempts) - 1; i >= 0; i-- {
		if d := j.Attempts[i].Backoff; d > 0 {
			return d
		}
	}
	return 0
}

// RemoteSnooze puts a remote attempt back for later without counting it,
// as a Go handler's Snooze does: the job waits again (scheduled) for
// Delay, its attempt not counted against its attempts, with no backoff;
// its attempt's record says "snoozed for D: Reason". With HoldKey its key
// (EnqueueOptions.Key) is held in its queue for Delay too, as a handler's
// HoldKey: no job of the key starts before then, in any process. At most
// Config.MaxSnoozes snoozes in a row are taken so; a further one counts
// as a failed attempt. A job whose cancel was requested ends cancelled.
type RemoteSnooze struct {
	Token string `json:"token"`
	// Delay is how long the job waits (0 to MaxRetryAfter).
	Delay   time.Duration `json:"delay"`
	HoldKey bool          `json:"hold_key,omitempty"`
	// Reason, if set, says why (a 429 from a tenant's API, say): kept in
	// the attempt's record.
	Reason string `json:"reason,omitempty"`
	// Result, if set, is kept with the snoozed attempt (JSON).
	Result json.RawMessage `json:"result,omitempty"`
	// Output, if set, is what the attempt wrote (see Completion.Output).
	Output *RemoteOutput `json:"output,omitempty"`
}

// SnoozeJobs puts back the attempts that worker holds, each for its
// RemoteSnooze.Delay, all or none, as CompleteJobs records outcomes: a
// stale or foreign token is a *LeaseError and nothing changes. Each job
// reaches scheduled (snoozed), or cancelled, or — past Config.MaxSnoozes
// snoozes in a row — retrying or dead as a failed attempt.
func (c *Client) SnoozeJobs(ctx context.Context, worker, owner string, ss []RemoteSnooze) ([]Finished, error) {
	tokens := make([]string, len(ss))
	for i, x := range ss {
		tokens[i] = x.Token
		field := fmt.Sprintf("snoozes[%d]", i)
		if x.Delay < 0 || x.Delay > MaxRetryAfter {
			return nil, &FieldError{Field: field + ".delay", Reason: fmt.Sprintf("must be between 0 and %s", MaxRetryAfter)}
		}
		if err := checkResult(field+".result", x.Result); err != nil {
			return nil, err
		}
	}
	return c.finishRemote(ctx, worker, owner, "snoozes", tokens, func(i int, j *job.Job, o *store.Outcome, now time.Time) {
		x := ss[i]
		sn := &job.SnoozeError{Delay: x.Delay, HoldKey: x.HoldKey}
		if x.Reason != "" {
			sn.Err = errors.New(cutError(x.Reason))
		}
		*o = engine.Decide(j, c.settingsOf(c.cfg.Workers.lookup(j.Kind), j), x.Result, sn, o.Record.Duration, now)
		o.Record.Worker = worker
		o.Output = c.remoteOutput(x.Output, j.Kind)
	})
}

// refuse reports le, refused outcomes or renewals of worker: the log's
// warning and RemoteOptions.OnRefused. It returns le.
func (c *Client) refuse(worker, what string, le *LeaseError) error {
	c.cfg.Logger.Warn("remote "+what+" refused: lease lost", "worker", worker, "jobs", le.Jobs)
	if f := c.cfg.Remote.OnRefused; f != nil {
		f(worker, le.Jobs)
	}
	return le
}

// remoteJobs returns the jobs of the leases ls as they were fetched (the
// client's table), reading from the store those fetched through another
// server or before a restart, and keeping them in the table.
func (c *Client) remoteJobs(ctx context.Context, ls []store.Lease) ([]*job.Job, error) {
	jobs := make([]*job.Job, len(ls))
	c.remote.mu.Lock()
	for i, l := range ls {
		jobs[i] = c.remote.leases[l]
	}
	c.remote.mu.Unlock()
	for i, l := range ls {
		if jobs[i] != nil {
			continue
		}
		j, err := c.store.Get(ctx, l.ID)
		if err != nil {
			return nil, fmt.Errorf("job %d: %w", l.ID, err)
		}
		jobs[i] = j
		if j.Claims == l.Claim {
			c.remote.mu.Lock()
			c.remote.leases[l] = j
			c.remote.mu.Unlock()
		}
	}
	return jobs, nil
}

// finishRemote checks worker's leases named by tokens, renewing them, and
// writes the outcomes decide fills in, reporting their transitions.
func (c *Client) finishRemote(ctx context.Context, worker, owner, field string, tokens []string,
	decide func(i int, j *job.Job, o *store.Outcome, now time.Time)) ([]Finished, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	if len(tokens) == 0 {
		return nil, &FieldError{Field: field, Reason: "give at least one"}
	}
	now := c.now()
	if _, err := c.remote.lookup(worker, owner, now); err != nil {
		return nil, err
	}
	ls, err := c.parseTokens(field, tokens, worker)
	if le := (*LeaseError)(nil); errors.As(err, &le) {
		return nil, c.refuse(worker, "outcome", le)
	}
	if err != nil {
		return nil, err
	}
	// The check: the store renews only the leases this worker still holds
	// by these claims; for a full lease from now, nothing but this
	// worker's outcome (or a cancel request, which Finish honours) can
	// change these jobs.
	hb, err := c.store.Heartbeat(ctx, store.HeartbeatParams{Now: now, Worker: worker, Jobs: ls, LeaseUntil: now.Add(c.cfg.LeaseDuration)})
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", err)
	}
	if len(hb.Lost) > 0 {
		le := &LeaseError{}
		lost := make(map[store.Lease]bool)
		for _, l := range hb.Lost {
			lost[l] = true
		}
		for i, l := range ls {
			if lost[l] {
				le.Tokens, le.Jobs = append(le.Tokens, tokens[i]), append(le.Jobs, l.ID)
			}
		}
		return nil, c.refuse(worker, "outcome", le)
	}
	cancelled := make(map[ID]bool, len(hb.Cancel))
	for _, id := range hb.Cancel {
		cancelled[id] = true
	}
	jobs, err := c.remoteJobs(ctx, ls)
	if err != nil {
		return nil, fmt.Errorf("outcome of %w", err)
	}
	outs := make([]store.Outcome, len(ls))
	for i, l := range ls {
		j := jobs[i]
		j.CancelRequested = j.CancelRequested || cancelled[l.ID]
		dur := max(now.Sub(j.StartedAt), 0)
		outs[i] = store.Outcome{ID: l.ID, Attempt: j.Attempt, Claim: l.Claim,
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: dur, Worker: worker}}
		decide(i, j, &outs[i], now)
		outs[i].Claim = l.Claim // the claim the token names, whatever decide set
		outs[i].Record.Outcome = outs[i].State.String()
		if outs[i].State == job.StateScheduled {
			outs[i].Record.Outcome = job.OutcomeSnoozed
		}
	}
	return c.recordRemote(ctx, now, ls, tokens, jobs, outs)
}

// remoteFinishTimeout bounds the write of a remote worker's outcomes once
// its request is gone.
const remoteFinishTimeout = 30 * time.Second

// recordRemote writes the outcomes outs of the leases ls (named by tokens,
// of jobs) and reports their transitions. An outcome the store did not
// apply (a duplicate request of the same outcome won the race) is left
// out; a *LeaseError if none applied. The write is not cancelled with
// ctx: a worker that goes away while its outcome is written (a request
// cancelled by its closed connection) must not leave an outcome the store
// committed unreported — a store may commit and still report the
// cancellation — so it runs to its end, bounded by remoteFinishTimeout.
func (c *Client) recordRemote(ctx context.Context, now time.Time, ls []store.Lease, tokens []string, jobs []*job.Job, outs []store.Outcome) ([]Finished, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), remoteFinishTimeout)
	defer cancel()
	reached, err := c.store.Finish(ctx, store.FinishParams{Now: now, Outcomes: outs})
	if err != nil {
		return nil, fmt.Errorf("record outcomes: %w", err)
	}
	observing := c.observing()
	out := make([]Finished, 0, len(ls))
	var late LeaseError
	c.remote.mu.Lock()
	for _, l := range ls {
		delete(c.remote.leases, l)
	}
	c.remote.mu.Unlock()
	for i, j := range jobs {
		if reached[i] == 0 { // a duplicate request of the same outcome won the race
			late.Tokens, late.Jobs = append(late.Tokens, tokens[i]), append(late.Jobs, j.ID)
			continue
		}
		out = append(out, Finished{ID: j.ID, State: reached[i]})
		if reached[i] == job.StateDead {
			c.maint.NotifyDead()
		}
		t := job.FinishEvent(reached[i])
		c.logRemote(t, j, outs[i].Record.Duration, outs[i].Error)
		if observing {
			a := j.Clone()
			if _, err := store.ApplyFinish(a, outs[i], now); err == nil {
				c.observe(Event{Type: t, Job: a, At: now})
			}
		}
	}
	if len(late.Tokens) > 0 && len(out) == 0 {
		return nil, &late
	}
	return out, nil
}
