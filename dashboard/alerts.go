package dashboard

import (
	"net/http"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/job"
)

// alertsRefresh is how often, in seconds, the alerts page reloads: the
// monitor opens and resolves incidents without a job's transition.
const alertsRefresh = 5

// alertsView is the alerts page's data.
type alertsView struct {
	Incidents []*hopper.Incident
	Open      int
	// Checks are the external checks, their ping IDs redacted unless the
	// reader has admin scope (ShowIDs).
	Checks  []job.CheckView
	ShowIDs bool
}

// alerts shows the incidents the schedules' monitors and the external
// checks found, newest first (Client.Incidents): the open ones first in
// mind, each with its job; and the external checks with their status,
// last ping and ping URL.
func (h *handler) alerts(w http.ResponseWriter, r *http.Request) {
	ins, err := h.c.Incidents(r.Context(), hopper.IncidentFilter{Limit: 200})
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	checks, err := h.c.Checks(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	v := alertsView{Incidents: ins}
	for _, in := range ins {
		if in.Open() {
			v.Open++
		}
	}
	scope := scopeOf(r.Context())
	if scope == httpauth.None {
		scope, _ = h.auth.Scope(r)
	}
	v.ShowIDs = scope >= httpauth.Admin
	now := h.c.Now()
	for _, c := range checks {
		v.Checks = append(v.Checks, c.View(now, v.ShowIDs))
	}
	h.render(w, r, http.StatusOK, "alerts", &page{Title: "Alerts", Nav: "alerts", Refresh: alertsRefresh, Data: v})
}
