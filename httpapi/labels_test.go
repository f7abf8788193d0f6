package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/hopperq/hopper"
)

// TestMetaAndTags: a job request's meta and tags are kept, GET /jobs and
// /jobs/count filter by ?tag=, and a bad tag or meta is refused naming
// the field.
func TestMetaAndTags(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			id := e.enqueue(`{"kind":"ok","meta":{"tenant":"acme","request":"r-1"},"tags":["billing","eu"]}`)
			e.enqueue(`{"kind":"ok","tags":["eu"]}`)
			e.enqueue(`{"kind":"ok"}`)
			j := e.job(id)
			if !maps.Equal(j.Meta, map[string]string{"tenant": "acme", "request": "r-1"}) || !slices.Equal(j.Tags, []string{"billing", "eu"}) {
				t.Errorf("stored meta %v tags %q", j.Meta, j.Tags)
			}
			var page struct{ Jobs []*hopper.Job }
			e.do("GET", "/api/v1/jobs?tag=billing", "").ok(http.StatusOK, &page)
			if len(page.Jobs) != 1 || page.Jobs[0].ID != id || page.Jobs[0].Meta["tenant"] != "acme" {
				t.Errorf("GET ?tag=billing: %+v", page.Jobs)
			}
			var n struct{ Count int }
			e.do("GET", "/api/v1/jobs/count?tag=eu", "").ok(http.StatusOK, &n)
			if n.Count != 2 {
				t.Errorf("count ?tag=eu: %d, want 2", n.Count)
			}
			e.do("GET", "/api/v1/jobs?tag=a%20b", "").fails(http.StatusBadRequest, CodeInvalid, "tag")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","tags":["no spaces"]}`).fails(http.StatusBadRequest, CodeInvalid, "tags")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","tags":["x","x"]}`).fails(http.StatusBadRequest, CodeInvalid, "tags")
			e.do("POST", "/api/v1/jobs", `{"kind":"ok","meta":{"":"v"}}`).fails(http.StatusBadRequest, CodeInvalid, "meta")
		})
	}
}
