package dashboard

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestTagFilter: /jobs?tag= lists only the jobs carrying the tag, offers
// no "every job matching" (the bulk actions select by state, queue and
// kind, not tag) and refuses one posted; a job's page shows its tags and
// metadata.
func TestTagFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	tagged := e.enqueue("ok", &hopper.EnqueueOptions{Tags: []string{"billing"}, Meta: map[string]string{"tenant": "acme"}})
	other := e.enqueue("ok", &hopper.EnqueueOptions{Tags: []string{"eu"}})
	body := e.get("/jobs?tag=billing", "").want(t, 200).body
	if !strings.Contains(body, fmt.Sprintf(`/jobs/%d"`, tagged)) || strings.Contains(body, fmt.Sprintf(`/jobs/%d"`, other)) {
		t.Errorf("/jobs?tag=billing does not list just job %d:\n%s", tagged, clip(body))
	}
	if strings.Contains(body, `id="select-all"`) || !strings.Contains(body, `value="billing"`) {
		t.Errorf("/jobs?tag=billing: select-all offered, or the filter not shown:\n%s", clip(body))
	}
	if body := e.get("/jobs?tag=nope", "").want(t, 200).body; strings.Contains(body, fmt.Sprintf(`/jobs/%d"`, tagged)) {
		t.Errorf("/jobs?tag=nope lists job %d", tagged)
	}
	page := e.get(fmt.Sprintf("/jobs/%d", tagged), "").want(t, 200).body
	if !strings.Contains(page, "?tag=billing") || !strings.Contains(page, "tenant") || !strings.Contains(page, "acme") {
		t.Errorf("the job's page lacks its tags or metadata:\n%s", clip(page))
	}
	r := e.post("/bulk", "", url.Values{"action": {"cancel"}, "all": {"1"}, "tag": {"billing"}, "confirm": {"1"}, "upto": {fmt.Sprint(other)}})
	if st, _ := e.c.Status(t.Context(), other); st == hopper.StateCancelled {
		t.Errorf("a bulk cancel of every job tagged billing cancelled job %d (tagged eu): %d %s", other, r.StatusCode, clip(r.body))
	}
}
