package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/jsondur"
	"github.com/hopperq/hopper/job"
)

// checkName reads and checks the {name} of a check route.
func checkName(r *http.Request) (string, error) {
	name := r.PathValue("name")
	if err := job.CheckName("name", name); err != nil {
		return "", err
	}
	return name, nil
}

// checkNotFound names the check in a not-found error.
func checkNotFound(err error, name string) error {
	if errors.Is(err, hopper.ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Field: "name", Message: fmt.Sprintf("check %q not found", name)}
	}
	return err
}

// showPingID reports whether r may see ping IDs: the ping ID is a bearer
// secret, shown to admin tokens only (docs/security.md, "External
// checks").
func (a *api) showPingID(r *http.Request) bool {
	_, err := a.auth.Allow(r, httpauth.Admin)
	return err == nil
}

// checks handles GET /checks: every check's view (job.CheckView).
func (a *api) checks(w http.ResponseWriter, r *http.Request) error {
	cs, err := a.c.Checks(r.Context())
	if err != nil {
		return err
	}
	show, now := a.showPingID(r), a.c.Now()
	out := make([]job.CheckView, len(cs))
	for i, c := range cs {
		out[i] = c.View(now, show)
	}
	reply(w, http.StatusOK, out)
	return nil
}

// checkInput is the body of POST /checks.
type checkInput struct {
	Name     string           `json:"name"`
	Period   jsondur.Duration `json:"period"`
	Cron     string           `json:"cron"`
	TimeZone string           `json:"time_zone"`
	Grace    jsondur.Duration `json:"grace"`
	Channels []string         `json:"channels"`
	PingID   string           `json:"ping_id"`
}

// addCheck handles POST /checks: creates a check (201 with its view, ping
// ID included: the route needs admin scope).
func (a *api) addCheck(w http.ResponseWriter, r *http.Request) error {
	var in checkInput
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	c, err := a.c.AddCheck(r.Context(), in.Name, hopper.CheckOptions{Period: in.Period.D(), Cron: in.Cron, TimeZone: in.TimeZone,
		Grace: in.Grace.D(), Channels: in.Channels, PingID: in.PingID})
	if err != nil {
		return err
	}
	httpauth.Note(r, "check", c.Name)
	reply(w, http.StatusCreated, c.View(a.c.Now(), true))
	return nil
}

// getCheck handles GET /checks/{name}[?pings=N]: the check's view and its
// latest N pings (default 20, at most job.DefaultPingsKept), newest first.
func (a *api) getCheck(w http.ResponseWriter, r *http.Request) error {
	name, err := checkName(r)
	if err != nil {
		return err
	}
	q, err := parseQuery(r)
	if err != nil {
		return err
	}
	n := 20
	if s, err := queryOne(q, "pings"); err != nil {
		return err
	} else if s != "" {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v < 1 || v > job.DefaultPingsKept {
			return invalid("pings", fmt.Sprintf("want a whole number from 1 to %d, got %q", job.DefaultPingsKept, s))
		}
		n = v
	}
	c, err := a.c.GetCheck(r.Context(), name)
	if err != nil {
		return checkNotFound(err, name)
	}
	pings, err := a.c.Pings(r.Context(), name, n)
	if err != nil {
		return checkNotFound(err, name)
	}
	reply(w, http.StatusOK, struct {
		job.CheckView
		RecentPings []*hopper.Ping `json:"recent_pings"`
	}{c.View(a.c.Now(), a.showPingID(r)), pings})
	return nil
}

// pauseCheck handles POST /checks/{name}/pause and /resume.
func (a *api) pauseCheck(pause bool) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		name, err := checkName(r)
		if err != nil {
			return err
		}
		if err := noBody(r); err != nil {
			return err
		}
		op := a.c.ResumeCheck
		if pause {
			op = a.c.PauseCheck
		}
		c, err := op(r.Context(), name)
		if err != nil {
			return checkNotFound(err, name)
		}
		httpauth.Note(r, "check", name)
		reply(w, http.StatusOK, c.View(a.c.Now(), a.showPingID(r)))
		return nil
	}
}

// removeCheck handles DELETE /checks/{name}: {"removed": name}.
func (a *api) removeCheck(w http.ResponseWriter, r *http.Request) error {
	name, err := checkName(r)
	if err != nil {
		return err
	}
	if err := noBody(r); err != nil {
		return err
	}
	if err := a.c.RemoveCheck(r.Context(), name); err != nil {
		return checkNotFound(err, name)
	}
	httpauth.Note(r, "check", name)
	reply(w, http.StatusOK, map[string]string{"removed": name})
	return nil
}
