package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/wire"
)

// enqueued is the response for one enqueued job.
type enqueued struct {
	ID hopper.ID `json:"id"`
	// State is the job's state: scheduled or available, or the existing
	// job's when Duplicate.
	State hopper.State `json:"state"`
	// Duplicate: the unique key was taken, ID is the job holding it and
	// nothing was inserted.
	Duplicate bool `json:"duplicate"`
	// Debounced: the job was merged into the job waiting with its unique
	// key (debounce), ID is that job's and nothing was inserted.
	Debounced bool `json:"debounced"`
}

// enqueue handles POST /jobs: one job. 201 with the new job's ID, or 200
// with the existing job's when its unique key was taken (or 409 duplicate
// if the client is configured with hopper.UniqueError) or it was debounced
// into it.
func (a *api) enqueue(w http.ResponseWriter, r *http.Request) error {
	var jr wire.Job
	if err := decodeBody(r, &jr); err != nil {
		return err
	}
	if err := a.needToEnqueue(r, jr.Kind); err != nil {
		return err
	}
	req, err := jr.Request(time.Now())
	if err != nil {
		return err
	}
	traceContext(r, req.Options)
	res, err := a.c.Enqueue(r.Context(), req.Kind, req.Args, req.Options)
	if errors.Is(err, hopper.ErrDuplicate) {
		return &Error{Status: http.StatusConflict, Code: CodeDuplicate, Field: "unique_key", Message: err.Error()}
	}
	if err != nil {
		return err
	}
	httpauth.Note(r, "job", res.ID, "kind", req.Kind, "duplicate", res.Duplicate, "debounced", res.Debounced)
	status := http.StatusCreated
	if res.Duplicate || res.Debounced {
		status = http.StatusOK
	}
	reply(w, status, enqueued{ID: res.ID, State: res.State, Duplicate: res.Duplicate, Debounced: res.Debounced})
	return nil
}

// batchResult is the response of a batch enqueue.
type batchResult struct {
	Jobs       []enqueued `json:"jobs"`
	Enqueued   int        `json:"enqueued"`
	Duplicates int        `json:"duplicates"`
	Debounced  int        `json:"debounced"`
}

// enqueueBatch handles POST /jobs/batch: {"jobs": [...]}, all enqueued in
// one store operation (one commit) or none. Duplicates are reported per
// job.
func (a *api) enqueueBatch(w http.ResponseWriter, r *http.Request) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	var body struct {
		Jobs []wire.Job `json:"jobs"`
	}
	if err := decodeStrict(b, &body, ""); err != nil {
		// Decode again job by job, to name the job at fault.
		var raw struct {
			Jobs []json.RawMessage `json:"jobs"`
		}
		if decodeStrict(b, &raw, "") != nil {
			return err
		}
		for i, jb := range raw.Jobs {
			var jr wire.Job
			if err := decodeStrict(jb, &jr, fmt.Sprintf("jobs[%d].", i)); err != nil {
				return err
			}
		}
		return err
	}
	switch n := len(body.Jobs); {
	case n == 0:
		return invalid("jobs", "empty: give at least one job")
	case n > MaxBatch:
		return invalid("jobs", fmt.Sprintf("%d jobs, more than the limit of %d per batch", n, MaxBatch))
	}
	kindSet := map[string]bool{}
	for _, jr := range body.Jobs {
		kindSet[jr.Kind] = true
	}
	// One exec job makes the batch need the exec scope.
	if err := a.needToEnqueue(r, slices.Collect(maps.Keys(kindSet))...); err != nil {
		return err
	}
	reqs, err := wire.Requests(body.Jobs, time.Now())
	if err == nil {
		for _, req := range reqs {
			traceContext(r, req.Options)
		}
		var res []hopper.EnqueueResult
		if res, err = a.c.EnqueueMany(r.Context(), reqs); err == nil {
			return a.batchReply(w, r, res, kindSet)
		}
	}
	e := toError(err, func(fe *hopper.FieldError) string {
		return fmt.Sprintf("jobs[%d].%s", fe.Index, fe.Field) // a batch of one is not indexed: 0
	})
	if e == nil {
		return err
	}
	return e
}

// batchReply writes the answer of a batch enqueued.
func (a *api) batchReply(w http.ResponseWriter, r *http.Request, res []hopper.EnqueueResult, kindSet map[string]bool) error {
	ids := make([]hopper.ID, len(res))
	for i, x := range res {
		ids[i] = x.ID
	}
	httpauth.Note(r, "jobs", len(res), httpauth.IDs(ids), "kinds", strings.Join(slices.Sorted(maps.Keys(kindSet)), ","))
	out := batchResult{Jobs: make([]enqueued, len(res))}
	for i, x := range res {
		out.Jobs[i] = enqueued{ID: x.ID, State: x.State, Duplicate: x.Duplicate, Debounced: x.Debounced}
		switch {
		case x.Duplicate:
			out.Duplicates++
		case x.Debounced:
			out.Debounced++
		default:
			out.Enqueued++
		}
	}
	status := http.StatusCreated
	if out.Enqueued == 0 {
		status = http.StatusOK
	}
	reply(w, status, out)
	return nil
}

// jobID parses the {id} of the path.
func jobID(r *http.Request) (hopper.ID, error) {
	return parseID("id", r.PathValue("id"))
}

// get handles GET /jobs/{id}: the job with its args, result, last error
// and attempt history, and wait_reason if something holds it (a paused
// queue).
func (a *api) get(w http.ResponseWriter, r *http.Request) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	j, err := a.c.Get(r.Context(), id)
	if err != nil {
		return notFound(err, id)
	}
	b, err := a.withWaitReason(r, j)
	if err != nil {
		return err
	}
	replyJSON(w, http.StatusOK, b)
	return nil
}

// notFound names the job in a not-found error.
func notFound(err error, id hopper.ID) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "id", Message: fmt.Sprintf("job %d not found", id)}
	}
	return err
}

// jobPage is a page of jobs, as page writes it. NextCursor, set when more jobs match, is the
// cursor of the next page: the ID of this page's last job.
type jobPage struct {
	Jobs       []*hopper.Job `json:"jobs"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// filters reads the state, queue, kind and tag query parameters. The names are
// checked by hopper.ListOptions, for every caller alike.
func filters(q map[string][]string) (hopper.ListOptions, error) {
	var o hopper.ListOptions
	var err error
	if o.States, err = parseStates(q["state"]); err != nil {
		return o, err
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"queue", &o.Queue}, {"kind", &o.Kind}, {"tag", &o.Tag}} {
		v, err := queryOne(q, f.name)
		if err != nil {
			return o, err
		}
		if _, given := q[f.name]; given && strings.TrimSpace(v) == "" {
			return o, invalid(f.name, "blank: leave it out for every "+f.name)
		}
		*f.to = v // a name no job can have is refused by the client's List and Count
	}
	return o, nil
}

// paging reads the limit and cursor query parameters into o.
func paging(q map[string][]string, o *hopper.ListOptions) error {
	o.Limit = DefaultListLimit
	if v, err := queryOne(q, "limit"); err != nil {
		return err
	} else if v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageLimit {
			return invalid("limit", fmt.Sprintf("%q: want an integer from 1 to %d (default %d)", v, MaxPageLimit, DefaultListLimit))
		}
		o.Limit = n
	}
	if v, err := queryOne(q, "cursor"); err != nil {
		return err
	} else if v != "" {
		id, err := parseID("cursor", v)
		if err != nil {
			return invalid("cursor", fmt.Sprintf("%q: want the next_cursor of the previous page", v))
		}
		o.AfterID = id
	}
	return nil
}

// pageChunk is how many jobs page reads from the store at a time: a page
// of 1,000 jobs holding the largest args (1 MiB each) then never has more
// than 26 of them in memory beside the page being encoded — measured on
// SQLite, a server's peak memory for such a page was 99 MB (207 MB reading
// 100 at a time, 1.75 GB for 400 jobs read at once) — while a page of
// 1,000 small jobs took 45 ms instead of 18 (40 reads).
const pageChunk = 25

// page lists a page of jobs by o: up to o.Limit jobs, fewer when their JSON
// would pass the page's byte budget (Options.MaxPageBytes; a page always
// holds one job), with next_cursor when more follow. It reads the store
// pageChunk jobs at a time, one more than it needs to know whether another
// follows, and encodes each job as it goes.
func (a *api) page(w http.ResponseWriter, r *http.Request, o hopper.ListOptions) error {
	limit := o.Limit
	var b bytes.Buffer
	b.WriteString(`{"jobs":[`)
	n, more := 0, false
	var last hopper.ID
read:
	for {
		want := min(limit-n, pageChunk)
		o.Limit = want + 1
		jobs, err := a.c.List(r.Context(), o)
		if err != nil {
			return err
		}
		for _, j := range jobs[:min(len(jobs), want)] {
			enc, err := json.Marshal(j)
			if err != nil {
				return err
			}
			if n > 0 && int64(b.Len()+1+len(enc)) > a.maxPage {
				more = true
				break read
			}
			if n > 0 {
				b.WriteByte(',')
			}
			b.Write(enc)
			n, last = n+1, j.ID
		}
		switch {
		case len(jobs) <= want: // the store has no more
			break read
		case n == limit:
			more = true
			break read
		}
		o.AfterID = last
	}
	b.WriteByte(']')
	if more {
		fmt.Fprintf(&b, `,"next_cursor":"%d"`, last)
	}
	b.WriteByte('}')
	replyJSON(w, http.StatusOK, b.Bytes())
	return nil
}

// list handles GET /jobs: filtered by state, queue, kind and creation
// time, oldest first (order=desc: newest first), paged by cursor.
func (a *api) list(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	o, err := filters(q)
	if err != nil {
		return err
	}
	if err := paging(q, &o); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"created_after", &o.CreatedAfter}, {"created_before", &o.CreatedBefore}} {
		v, err := queryOne(q, f.name)
		if err != nil {
			return err
		}
		if v == "" {
			continue
		}
		if *f.to, err = wire.ParseTime(f.name, v); err != nil {
			return err
		}
	}
	if !o.CreatedAfter.IsZero() && !o.CreatedBefore.IsZero() && !o.CreatedBefore.After(o.CreatedAfter) {
		return invalid("created_before", "must be after created_after")
	}
	switch v, err := queryOne(q, "order"); {
	case err != nil:
		return err
	case v == "desc":
		o.Desc = true
	case v == "", v == "asc":
	default:
		return invalid("order", fmt.Sprintf("%q: want asc (oldest first, the default) or desc", v))
	}
	return a.page(w, r, o)
}

// count handles GET /jobs/count: how many jobs match state, queue and
// kind.
func (a *api) count(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	o, err := filters(q)
	if err != nil {
		return err
	}
	n, err := a.c.Count(r.Context(), o)
	if err != nil {
		return err
	}
	reply(w, http.StatusOK, map[string]int{"count": n})
	return nil
}

// cancel handles POST /jobs/{id}/cancel. A waiting job is cancelled at
// once; a running job is asked to stop (cancel_requested). Cancelling a
// cancelled job succeeds (nothing changes); a completed or dead job is a
// conflict. The response is the job afterwards.
func (a *api) cancel(w http.ResponseWriter, r *http.Request) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	ok, err := a.c.Cancel(r.Context(), id)
	if err != nil {
		return err
	}
	j, err := a.c.Get(r.Context(), id)
	if err != nil {
		return notFound(err, id)
	}
	if !ok && j.State != hopper.StateCancelled {
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Field: "id",
			Message: fmt.Sprintf("job %d is %s: it can no longer be cancelled", id, j.State)}
	}
	reply(w, http.StatusOK, j)
	return nil
}

// reschedule handles POST /jobs/{id}/reschedule: a waiting job gets a new
// run time (run_at, or delay from now; "0s" is now) and/or priority. A
// running or finished job is a conflict.
func (a *api) reschedule(w http.ResponseWriter, r *http.Request) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	var rr wire.Reschedule
	if err := decodeBody(r, &rr); err != nil {
		return err
	}
	runAt, priority, err := rr.Args(time.Now())
	if err != nil {
		return err
	}
	j, err := a.c.Reschedule(r.Context(), id, runAt, priority)
	switch {
	case errors.Is(err, hopper.ErrNotWaiting) && j != nil:
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Field: "id",
			Message: fmt.Sprintf("job %d is %s: only a waiting job can be rescheduled", id, j.State)}
	case err != nil:
		return notFound(err, id)
	}
	reply(w, http.StatusOK, j)
	return nil
}

// idsRequest is a body holding job IDs.
type idsRequest struct {
	IDs []hopper.ID `json:"ids"`
}

// deleteOne handles DELETE /jobs/{id}: deletes a finished job for good. A
// waiting or running job is a conflict (cancel it first).
func (a *api) deleteOne(w http.ResponseWriter, r *http.Request) error {
	id, err := jobID(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	n, err := a.c.Delete(r.Context(), id)
	if err != nil {
		return err
	}
	if n == 0 {
		j, err := a.c.Get(r.Context(), id)
		if err != nil {
			return notFound(err, id)
		}
		return &Error{Status: http.StatusConflict, Code: CodeConflict, Field: "id",
			Message: fmt.Sprintf("job %d is %s: only finished jobs (completed, cancelled, dead) can be deleted; cancel it first", id, j.State)}
	}
	reply(w, http.StatusOK, map[string]int{"deleted": n})
	return nil
}

// deleteMany handles POST /jobs/delete: {"ids": [...]} deletes those of
// the jobs that are finished and reports how many.
func (a *api) deleteMany(w http.ResponseWriter, r *http.Request) error {
	var body idsRequest
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if len(body.IDs) == 0 {
		return invalid("ids", "give the IDs of the finished jobs to delete")
	}
	if err := checkIDs("ids", body.IDs); err != nil {
		return err
	}
	n, err := a.c.Delete(r.Context(), body.IDs...)
	if err != nil {
		return err
	}
	httpauth.Note(r, httpauth.IDs(body.IDs), "deleted", n)
	reply(w, http.StatusOK, map[string]int{"deleted": n})
	return nil
}
