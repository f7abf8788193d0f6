package httpapi

import (
	"fmt"
	"net/http"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/wire"
	"github.com/hopperq/hopper/kinds"
)

// dlqList handles GET /dlq: the dead jobs, oldest first, paged as GET
// /jobs.
func (a *api) dlqList(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	o := hopper.ListOptions{States: []hopper.State{hopper.StateDead}}
	if err := paging(q, &o); err != nil {
		return err
	}
	return a.page(w, r, o)
}

// dlqRetryRequest is the body of POST /dlq/retry: IDs, or all.
type dlqRetryRequest struct {
	IDs []hopper.ID `json:"ids"`
	All bool        `json:"all"`
}

// dlqRetry handles POST /dlq/retry: {"ids": [...]} or {"all": true} move
// dead jobs back to waiting with their attempts reset. An empty selection
// is refused, never read as "all". Retrying a job that runs a command
// (kinds.RunsCommand) runs it again: with a token without the exec scope,
// ids naming one are refused (403, nothing retried), and all leaves them
// dead.
func (a *api) dlqRetry(w http.ResponseWriter, r *http.Request) error {
	var body dlqRetryRequest
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	var n int
	var err error
	switch {
	case body.All && body.IDs != nil:
		return invalid("all", "give ids or all, not both")
	case body.All:
		httpauth.Note(r, "all", true)
		o := hopper.BulkOptions{States: []hopper.State{hopper.StateDead}}
		if !mayRunCommands(r) {
			o.ExceptKinds = kinds.CommandKinds()
			httpauth.Note(r, "except_kinds", o.ExceptKinds)
		}
		var res hopper.BulkResult
		res, err = a.c.RetryMatching(r.Context(), o)
		n = res.Done
	case len(body.IDs) == 0:
		return invalid("ids", `give the IDs of the dead jobs to retry, or "all": true`)
	default:
		if err := checkIDs("ids", body.IDs); err != nil {
			return err
		}
		httpauth.Note(r, httpauth.IDs(body.IDs))
		if err := a.mayRetry(r, body.IDs); err != nil {
			return err
		}
		n, err = a.c.RetryDead(r.Context(), body.IDs...)
	}
	if err != nil {
		return err
	}
	httpauth.Note(r, "retried", n)
	reply(w, http.StatusOK, map[string]int{"retried": n})
	return nil
}

// dlqPurgeRequest is the body of POST /dlq/purge: exactly one of IDs,
// OlderThan and All.
type dlqPurgeRequest struct {
	IDs       []hopper.ID    `json:"ids"`
	OlderThan *wire.Duration `json:"older_than"`
	All       bool           `json:"all"`
}

// dlqPurge handles POST /dlq/purge: deletes dead jobs for good — the given
// IDs, those dead for longer than older_than, or all of them. Exactly one
// of the three: an empty selection deletes nothing.
func (a *api) dlqPurge(w http.ResponseWriter, r *http.Request) error {
	var body dlqPurgeRequest
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	given := 0
	for _, g := range []bool{body.IDs != nil, body.OlderThan != nil, body.All} {
		if g {
			given++
		}
	}
	if given != 1 {
		return invalid("ids", fmt.Sprintf(`give exactly one of "ids", "older_than" and "all": true (got %d)`, given))
	}
	var n int
	var err error
	switch {
	case body.All:
		httpauth.Note(r, "all", true)
		n, err = a.c.PurgeAllDead(r.Context())
	case body.OlderThan != nil:
		d := body.OlderThan.D()
		if d <= 0 {
			return invalid("older_than", fmt.Sprintf(`must be positive, got %s ("all": true purges every dead job)`, d))
		}
		httpauth.Note(r, "older_than", d)
		n, err = a.c.PurgeDeadOlderThan(r.Context(), d)
	default:
		if len(body.IDs) == 0 {
			return invalid("ids", "empty: give the IDs of the dead jobs to purge")
		}
		if err := checkIDs("ids", body.IDs); err != nil {
			return err
		}
		httpauth.Note(r, httpauth.IDs(body.IDs))
		n, err = a.c.PurgeDead(r.Context(), body.IDs...)
	}
	if err != nil {
		return err
	}
	httpauth.Note(r, "purged", n)
	reply(w, http.StatusOK, map[string]int{"purged": n})
	return nil
}

// mayRetry checks that r may retry the jobs ids: with a token without the
// exec scope, none may run a command (kinds.RunsCommand). A job's kind
// never changes, so the check holds when the retry runs; jobs not found
// are left to RetryDead, which skips them.
func (a *api) mayRetry(r *http.Request, ids []hopper.ID) error {
	if mayRunCommands(r) {
		return nil
	}
	id, kind, err := kinds.CommandJob(r.Context(), a.c, ids)
	if err != nil || id == 0 {
		return err
	}
	return a.needExec(r, fmt.Sprintf("retrying job %d (kind %s)", id, kind))
}
