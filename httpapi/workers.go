package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/jsondur"
)

// The worker protocol (docs/workers.md): programs in any language register
// as remote workers, take jobs with a long poll, renew their leases and
// report outcomes. Its verbs need the worker scope (or admin); quiet and
// stop, which operators send, need write.

// workerView is a registered remote worker as the API shows it.
type workerView struct {
	ID                string           `json:"id"`
	Kinds             []string         `json:"kinds"`
	Queues            []string         `json:"queues"`
	Slots             int              `json:"slots"`
	Name              string           `json:"name,omitempty"`
	Host              string           `json:"host,omitempty"`
	PID               int              `json:"pid,omitempty"`
	Version           string           `json:"version,omitempty"`
	Token             string           `json:"token,omitempty"` // the name of the token that registered it
	RegisteredAt      time.Time        `json:"registered_at"`
	SeenAt            time.Time        `json:"seen_at"`
	Quiet             bool             `json:"quiet"`
	Stop              bool             `json:"stop"`
	LeaseDuration     jsondur.Duration `json:"lease_duration"`
	HeartbeatInterval jsondur.Duration `json:"heartbeat_interval"`
	MaxWait           jsondur.Duration `json:"max_wait"`
}

func viewWorker(w hopper.RemoteWorker) workerView {
	return workerView{
		ID: w.ID, Kinds: w.Kinds, Queues: cmpSlice(w.Queues), Slots: w.Slots, Name: w.Name, Host: w.Host, PID: w.PID,
		Version: w.Version, Token: w.Owner, RegisteredAt: w.RegisteredAt, SeenAt: w.SeenAt, Quiet: w.Quiet, Stop: w.Stop,
		LeaseDuration: jsondur.Duration(w.LeaseDuration), HeartbeatInterval: jsondur.Duration(w.HeartbeatInterval),
		MaxWait: jsondur.Duration(hopper.MaxFetchWait),
	}
}

func cmpSlice(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// owner is the name of the token of r ("" without tokens).
func owner(r *http.Request) string {
	p, _ := httpauth.FromContext(r.Context())
	return p.Name
}

// registerWorker handles POST /workers: a worker's kinds, queues and
// slots; 201 with its ID and what it must know (lease, heartbeat
// interval). A worker token limited to queues registers for those only.
func (a *api) registerWorker(w http.ResponseWriter, r *http.Request) error {
	var spec hopper.WorkerSpec
	if err := decodeBody(r, &spec); err != nil {
		return err
	}
	name := owner(r)
	if allowed := a.auth.Queues(name); len(allowed) > 0 {
		if len(spec.Queues) == 0 {
			spec.Queues = allowed
		}
		for i, q := range spec.Queues {
			if !slices.Contains(allowed, q) {
				return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Field: fmt.Sprintf("queues[%d]", i),
					Message: fmt.Sprintf("this token may work only the queues %q, not %q", allowed, q)}
			}
		}
	}
	rw, err := a.c.RegisterWorker(r.Context(), spec, name)
	if err != nil {
		return err
	}
	httpauth.Note(r, "worker", rw.ID, "kinds", rw.Kinds)
	reply(w, http.StatusCreated, viewWorker(rw))
	return nil
}

// listWorkers handles GET /workers: the remote workers registered with
// this server.
func (a *api) listWorkers(w http.ResponseWriter, r *http.Request) error {
	if err := noBody(r); err != nil {
		return err
	}
	ws, err := a.c.RemoteWorkers()
	if err != nil {
		return err
	}
	out := make([]workerView, len(ws))
	for i, x := range ws {
		out[i] = viewWorker(x)
	}
	reply(w, http.StatusOK, struct {
		Workers []workerView `json:"workers"`
	}{out})
	return nil
}

// deregisterWorker handles DELETE /workers/{id}: the worker leaves.
func (a *api) deregisterWorker(w http.ResponseWriter, r *http.Request) error {
	if err := noBody(r); err != nil {
		return err
	}
	id := r.PathValue("id")
	if err := a.c.DeregisterWorker(r.Context(), id, owner(r)); err != nil {
		return err
	}
	httpauth.Note(r, "worker", id)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fetchBody is the body of POST /workers/{id}/fetch.
type fetchBody struct {
	Max  int              `json:"max"`
	Wait jsondur.Duration `json:"wait"`
}

// fetch handles POST /workers/{id}/fetch: up to max jobs, waiting up to
// wait for one.
func (a *api) fetch(w http.ResponseWriter, r *http.Request) error {
	b := fetchBody{Max: 1}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	res, err := a.c.FetchJobs(r.Context(), hopper.FetchParams{Worker: r.PathValue("id"), Owner: owner(r), Max: b.Max, Wait: b.Wait.D()})
	if err != nil {
		return err
	}
	reply(w, http.StatusOK, res)
	return nil
}

// heartbeat handles POST /workers/{id}/heartbeat.
func (a *api) heartbeat(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Tokens []string `json:"tokens"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	res, err := a.c.HeartbeatWorker(r.Context(), r.PathValue("id"), owner(r), b.Tokens)
	if err != nil {
		return err
	}
	reply(w, http.StatusOK, res)
	return nil
}

// finishedView is the answer of complete and fail.
type finishedView struct {
	Jobs []hopper.Finished `json:"jobs"`
}

// completeOne handles POST /workers/{id}/complete: one completion.
func (a *api) completeOne(w http.ResponseWriter, r *http.Request) error {
	var c hopper.Completion
	if err := decodeBody(r, &c); err != nil {
		return err
	}
	return a.complete(w, r, []hopper.Completion{c}, "")
}

// completeBatch handles POST /workers/{id}/complete/batch.
func (a *api) completeBatch(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Completions []hopper.Completion `json:"completions"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	return a.complete(w, r, b.Completions, "completions")
}

func (a *api) complete(w http.ResponseWriter, r *http.Request, cs []hopper.Completion, field string) error {
	res, err := a.c.CompleteJobs(r.Context(), r.PathValue("id"), owner(r), cs)
	if err != nil {
		return leaseErr(err, field)
	}
	reply(w, http.StatusOK, finishedView{Jobs: res})
	return nil
}

// failureBody is a failure as the API reads it.
type failureBody struct {
	Token      string               `json:"token"`
	Error      string               `json:"error"`
	Permanent  bool                 `json:"permanent"`
	RetryAfter jsondur.Duration     `json:"retry_after"`
	Result     json.RawMessage      `json:"result"`
	Output     *hopper.RemoteOutput `json:"output"`
}

func (f failureBody) failure() hopper.Failure {
	return hopper.Failure{Token: f.Token, Error: f.Error, Permanent: f.Permanent, RetryAfter: f.RetryAfter.D(), Result: f.Result, Output: f.Output}
}

// failOne handles POST /workers/{id}/fail: one failure.
func (a *api) failOne(w http.ResponseWriter, r *http.Request) error {
	var f failureBody
	if err := decodeBody(r, &f); err != nil {
		return err
	}
	return a.fail1(w, r, []hopper.Failure{f.failure()}, "")
}

// failBatch handles POST /workers/{id}/fail/batch.
func (a *api) failBatch(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Failures []failureBody `json:"failures"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	fs := make([]hopper.Failure, len(b.Failures))
	for i, f := range b.Failures {
		fs[i] = f.failure()
	}
	return a.fail1(w, r, fs, "failures")
}

func (a *api) fail1(w http.ResponseWriter, r *http.Request, fs []hopper.Failure, field string) error {
	res, err := a.c.FailJobs(r.Context(), r.PathValue("id"), owner(r), fs)
	if err != nil {
		return leaseErr(err, field)
	}
	reply(w, http.StatusOK, finishedView{Jobs: res})
	return nil
}

// snoozeBody is a snooze as the API reads it.
type snoozeBody struct {
	Token   string               `json:"token"`
	Delay   jsondur.Duration     `json:"delay"`
	HoldKey bool                 `json:"hold_key"`
	Reason  string               `json:"reason"`
	Result  json.RawMessage      `json:"result"`
	Output  *hopper.RemoteOutput `json:"output"`
}

func (b snoozeBody) snooze() hopper.RemoteSnooze {
	return hopper.RemoteSnooze{Token: b.Token, Delay: b.Delay.D(), HoldKey: b.HoldKey, Reason: b.Reason, Result: b.Result, Output: b.Output}
}

// snoozeOne handles POST /workers/{id}/snooze: one attempt put back for
// later, not counted (and its key held, with hold_key).
func (a *api) snoozeOne(w http.ResponseWriter, r *http.Request) error {
	var b snoozeBody
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	return a.snooze(w, r, []hopper.RemoteSnooze{b.snooze()}, "")
}

// snoozeBatch handles POST /workers/{id}/snooze/batch.
func (a *api) snoozeBatch(w http.ResponseWriter, r *http.Request) error {
	var b struct {
		Snoozes []snoozeBody `json:"snoozes"`
	}
	if err := decodeBody(r, &b); err != nil {
		return err
	}
	ss := make([]hopper.RemoteSnooze, len(b.Snoozes))
	for i, x := range b.Snoozes {
		ss[i] = x.snooze()
	}
	return a.snooze(w, r, ss, "snoozes")
}

func (a *api) snooze(w http.ResponseWriter, r *http.Request, ss []hopper.RemoteSnooze, field string) error {
	res, err := a.c.SnoozeJobs(r.Context(), r.PathValue("id"), owner(r), ss)
	if err != nil {
		return leaseErr(err, field)
	}
	reply(w, http.StatusOK, finishedView{Jobs: res})
	return nil
}

// leaseErr names the fields of a single outcome's errors as its body has
// them ("token", not "failures[0].token"), and turns a lost lease into
// a 409.
func leaseErr(err error, field string) error {
	var le *hopper.LeaseError
	if errors.As(err, &le) {
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Field: "token", Message: le.Error()}
	}
	var fe *hopper.FieldError
	if field == "" && errors.As(err, &fe) {
		f := fe.Field
		for _, p := range []string{"completions[0].", "failures[0].", "snoozes[0].", "completions[0]", "failures[0]", "snoozes[0]"} {
			if len(f) >= len(p) && f[:len(p)] == p {
				f = f[len(p):]
				break
			}
		}
		if f == "" {
			f = "token"
		}
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Field: f, Message: fe.Reason}
	}
	return err
}

// quietWorker handles POST /workers/{id}/quiet and /stop.
func (a *api) quietWorker(stop bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := noBody(r); err != nil {
			return err
		}
		rw, err := a.c.QuietWorker(r.PathValue("id"), stop)
		if err != nil {
			return err
		}
		httpauth.Note(r, "worker", rw.ID)
		reply(w, http.StatusOK, viewWorker(rw))
		return nil
	}
}
