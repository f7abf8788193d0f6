package dashboard

import (
	"net/http"

	"github.com/hopperq/hopper"
)

// serversRefresh is how often, in seconds, the servers page reloads: the
// heart-beats it shows change without any job's transition, which is what
// the live stream reports.
const serversRefresh = 5

// serversView is the servers page's data.
type serversView struct {
	Servers []hopper.ServerInfo
	Alive   int
	Running string // the page of the running jobs
}

// servers shows the servers working the store (Client.Servers): alive or
// gone, the leader, their running jobs.
func (h *handler) servers(w http.ResponseWriter, r *http.Request) {
	svs, err := h.c.Servers(r.Context())
	if err != nil {
		h.storeFailed(w, r, err)
		return
	}
	v := serversView{Servers: svs, Running: h.url("/jobs") + "?state=running"}
	for _, s := range svs {
		if s.Alive {
			v.Alive++
		}
	}
	h.render(w, r, http.StatusOK, "servers", &page{Title: "Servers", Nav: "servers", Refresh: serversRefresh, Data: v})
}
