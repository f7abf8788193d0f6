package httpapi

import (
	"net/http"

	"github.com/hopperq/hopper"
)

// serversView is the response of GET /servers.
type serversView struct {
	Servers []hopper.ServerInfo `json:"servers"`
}

// servers handles GET /servers: the servers working the store
// (Client.Servers), earliest start first.
func (a *api) servers(w http.ResponseWriter, r *http.Request) error {
	if err := noBody(r); err != nil {
		return err
	}
	svs, err := a.c.Servers(r.Context())
	if err != nil {
		return err
	}
	reply(w, http.StatusOK, serversView{Servers: svs})
	return nil
}
