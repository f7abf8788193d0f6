package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/job"
)

// incidents handles GET /incidents[?schedule=&check=&open=&limit=&cursor=]:
// the monitors' and the external checks' incidents, newest first; next_cursor, when set, is the
// cursor of the next page.
func (a *api) incidents(w http.ResponseWriter, r *http.Request) error {
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	var f hopper.IncidentFilter
	if f.Schedule, err = q.one("schedule"); err != nil {
		return err
	}
	if f.Check, err = q.one("check"); err != nil {
		return err
	}
	if f.Open, err = q.flag("open"); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		to   *int64
		max  int64
	}{{"limit", nil, 1000}, {"cursor", &f.Before, 1 << 62}} {
		v, given, err := q.number(p.name, 1, p.max, func(s string) string {
			return fmt.Sprintf("want a whole number from 1 to %d, got %q", p.max, s)
		})
		switch {
		case err != nil:
			return err
		case !given:
		case p.to != nil:
			*p.to = v
		default:
			f.Limit = int(v)
		}
	}
	ins, err := a.c.Incidents(r.Context(), f)
	if err != nil {
		return err
	}
	page := struct {
		Incidents  []*hopper.Incident `json:"incidents"`
		NextCursor string             `json:"next_cursor,omitempty"`
	}{Incidents: ins}
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	if len(ins) == limit {
		page.NextCursor = strconv.FormatInt(ins[len(ins)-1].ID, 10)
	}
	reply(w, http.StatusOK, page)
	return nil
}

// channelName reads and checks the {name} of a channel route.
func channelName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if err := job.CheckName("name", name); err != nil {
		return "", err
	}
	return name, nil
}

// channelNotFound names the channel in a not-found error.
func channelNotFound(err error, name string) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "name", Message: fmt.Sprintf("channel %q not found", name)}
	}
	return err
}

// channels handles GET /channels: every channel, its secrets redacted.
func (a *api) channels(w http.ResponseWriter, r *http.Request) error {
	chs, err := a.c.Channels(r.Context())
	if err != nil {
		return err
	}
	out := make([]*hopper.Channel, len(chs))
	for i, ch := range chs {
		out[i] = ch.Redacted()
	}
	reply(w, http.StatusOK, out)
	return nil
}

// putChannel handles POST /channels/{name}: adds or replaces a channel
// (200 with it, redacted). A secret given as job.RedactedSecret, and a
// URL equal to the stored one redacted, keep the stored values. A command
// channel — new, or replacing one — needs exec scope too (the route needs
// admin, which includes it: the rule, stated).
func (a *api) putChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := channelName(r)
	if err != nil {
		return err
	}
	var ch hopper.Channel
	if err := decodeBody(r, &ch); err != nil {
		return err
	}
	if ch.Name != "" && ch.Name != name {
		return invalid("name", fmt.Sprintf("differs from the path's %q: leave it out, or give the same", name))
	}
	ch.Name = name
	stored, err := a.c.Channel(r.Context(), name)
	if err != nil && !errors.Is(err, hopper.ErrNotFound) {
		return err
	}
	if ch.Type == job.ChannelCommand || stored != nil && stored.Type == job.ChannelCommand {
		if err := a.needExec(r, "a command channel"); err != nil {
			return err
		}
	}
	ch = ch.Unredact(stored)
	if err := a.c.SetChannel(r.Context(), ch); err != nil {
		return err
	}
	got, err := a.c.Channel(r.Context(), name)
	if err != nil {
		return err
	}
	httpauth.Note(r, "channel", name, "type", string(ch.Type))
	reply(w, http.StatusOK, got.Redacted())
	return nil
}

// removeChannel handles DELETE /channels/{name}: {"removed": name}.
func (a *api) removeChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := channelName(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if err := a.c.RemoveChannel(r.Context(), name); err != nil {
		return channelNotFound(err, name)
	}
	httpauth.Note(r, "channel", name)
	reply(w, http.StatusOK, map[string]string{"removed": name})
	return nil
}

// testChannel handles POST /channels/{name}/test: enqueues a test
// notification (201 with its job).
func (a *api) testChannel(w http.ResponseWriter, r *http.Request) error {
	name, err := channelName(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	j, err := a.c.TestChannel(r.Context(), name)
	if err != nil {
		return channelNotFound(err, name)
	}
	httpauth.Note(r, "channel", name, "job", j.ID)
	reply(w, http.StatusCreated, j)
	return nil
}
