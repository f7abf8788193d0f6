package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestEnqueueMetaAndTags: enqueue --meta and --tag keep them with the job,
// jobs get shows them, jobs list and count filter by --tag, schedule add
// gives them to its jobs, and a bad one is a usage error naming the flag.
func TestEnqueueMetaAndTags(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	id := hop(t, db, "enqueue", "--meta", "tenant=acme", "--meta", "note=a=b", "--tag", "billing,eu", "--tag", "nightly",
		"exec", "--", "true").ok(t).id(t)
	other := hop(t, db, "enqueue", "--tag", "eu", "exec", "--", "true").ok(t).id(t)
	j := getJobJSON(t, db, id)
	if j.Meta["tenant"] != "acme" || j.Meta["note"] != "a=b" || strings.Join(j.Tags, " ") != "billing eu nightly" {
		t.Fatalf("job meta %v tags %q", j.Meta, j.Tags)
	}
	hop(t, db, "jobs", "get", fmt.Sprint(id)).ok(t).has(t, "billing, eu, nightly", `"acme"`, "meta tenant")
	var listed []hopper.Job
	hop(t, db, "jobs", "list", "--tag", "billing", "--json").ok(t).decode(&listed)
	if len(listed) != 1 || listed[0].ID != id {
		t.Errorf("jobs list --tag billing: %+v, want job %d only (not %d)", listed, id, other)
	}
	hop(t, db, "jobs", "count", "--tag", "eu").ok(t).has(t, "2")
	hop(t, db, "schedule", "add", "tagged", "--every", "1h", "--tag", "cron", "--meta", "team=ops", "exec", "--", "true").ok(t)
	hop(t, db, "schedule", "list", "--json").ok(t).has(t, `"cron"`, `"team": "ops"`)
	hop(t, db, "enqueue", "--tag", "no space", "exec", "--", "true").fails(t, 2, "--tag", "ASCII letters")
	hop(t, db, "enqueue", "--meta", "novalue", "exec", "--", "true").fails(t, 2, "--meta", "key=value")
	hop(t, db, "jobs", "list", "--tag", "a b").fails(t, 2, "tag")
}
