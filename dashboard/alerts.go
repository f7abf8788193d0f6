package dashboard

import (
	"net/http"

	"github.com/hopperq/hopper"
)

// alertsRefresh is how often, in seconds, the alerts page reloads: the
// monitor opens and resolves incidents without a job's transition.
const alertsRefresh = 5

// alertsView is the alerts page's data.
type alertsView struct {
	Incidents []*hopper.Incident
	Open      int
}

// alerts shows the incidents the schedules' monitors found, newest first
// (Client.Incidents): the open ones first in mind, each with its job.
func (h *handler) alerts(w http.ResponseWriter, r *http.Request) {
	ins, err := h.c.Incidents(r.Context(), hopper.IncidentFilter{Limit: 200})
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
	h.render(w, r, http.StatusOK, "alerts", &page{Title: "Alerts", Nav: "alerts", Refresh: alertsRefresh, Data: v})
}
