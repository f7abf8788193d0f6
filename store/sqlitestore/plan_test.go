package sqlitestore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// TestQueryPlans checks that the queries on the hot paths (claim,
// promotion, rescue, finish, uniqueness) are index-driven: no full scan of
// jobs, so they stay fast with millions of rows.
func TestQueryPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "plan.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var js []*job.Job
	for i := range 200 {
		j := &job.Job{Kind: []string{"k", "l"}[i%2], Queue: []string{"a", "b", "c"}[i%3], Priority: i % 5,
			RunAt: now.Add(time.Duration(i%7-3) * time.Minute), MaxAttempts: 3}
		if i%10 == 0 {
			j.UniqueKey = "u" + string(rune('a'+i/10))
		}
		if err := j.Validate(now); err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
	}
	if _, err := s.Enqueue(ctx, store.EnqueueParams{Now: now, Jobs: js}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, store.ClaimParams{Now: now, Limit: 20, Worker: "w", LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, s)
	// Statistics (ANALYZE, which Hopper never runs itself) must not change
	// the plans either.
	if err := s.write(ctx, func(w *writer) error { _, err := w.conn.ExecContext(bg, "ANALYZE"); return err }); err != nil {
		t.Fatal(err)
	}
	checkPlans(t, s)
}

func checkPlans(t *testing.T, s *Store) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	purge := func(p store.PurgeParams) string { q, _ := purgeSQL(p); return q }
	queues, kinds := `["a","c"]`, `["k"]`
	// Bulk batches: by primary key over their ID range, never through a
	// partial index of every matching job and a sort.
	avail, _ := matchWhere(store.MatchParams{Queue: "a", Kind: "k"}, []job.State{job.StateAvailable})
	done, _ := matchWhere(store.MatchParams{Queue: "a"}, store.DeleteStates)
	for _, q := range []struct {
		name, sql string
		args      []any
		uses      string // what the plan must use, if anything
	}{
		{"promote all", sqlPromoteAll, []any{1}, "INDEX jobs_due "},
		{"promote lanes of queues", sqlPromoteLanes, []any{queues, nil, 1}, "INDEX jobs_due_lane "},
		{"promote lanes of kinds", sqlPromoteLanes, []any{nil, kinds, 1}, "INDEX jobs_due_lane "},
		{"promote lanes", sqlPromoteLanes, []any{queues, kinds, 1}, "INDEX jobs_due_lane "},
		{"count promoted all", sqlPromotedAll, []any{1}, "INDEX jobs_due "},
		{"count promoted lanes", sqlPromotedLanes, []any{queues, kinds, 1}, "INDEX jobs_due_lane "},
		{"ready lanes", sqlReadyLanes, []any{queues, kinds}, "PRIMARY KEY (state=?)"},
		{"candidates", sqlCandidates, []any{"a", "k", 10}, "INDEX jobs_claim "},
		{"claim", sqlClaim, []any{1, "w", 2, "me", "[1,2,3]"}, "INTEGER PRIMARY KEY"},
		{"claim 1 lane", claimSQL[1], []any{1, "w", 2, "me", 10, "a", "k", 10}, "INDEX jobs_claim "},
		{"claim 3 lanes", claimSQL[3], []any{1, "w", 2, "me", 10, "a", "k", 10, "b", "k", 5, "a", "l", 10}, "INDEX jobs_claim "},
		{"claim 3 lanes capped", claimCappedSQL[3], []any{1, "w", 2, "me", 10, "a", "k", 3, 3, "a", "l", 3, 3, "b", "k", 10, 10}, "INDEX jobs_claim "},
		{"next run all", sqlNextRunAll, nil, "INDEX jobs_due "},
		{"next run lanes", sqlNextRunLanes, []any{queues, kinds}, "INDEX jobs_due_lane "},
		{"next run lanes of kinds", sqlNextRunLanes, []any{nil, kinds}, "INDEX jobs_due_lane "},
		{"rescue", sqlRescue, []any{1}, "INDEX jobs_lease "},
		{"expire dead worker", sqlExpireWorker, []any{"w"}, "INDEX jobs_claimed_by "},
		{"next key", sqlNextKey, []any{"a", "k"}, "INDEX jobs_key (queue=? AND flow_key>?)"},
		{"next key up to", sqlNextKeyUpTo, []any{"a", "k", "m"}, "INDEX jobs_key (queue=? AND flow_key>? AND flow_key<?)"},
		{"finish", sqlFinish, []any{"completed", "{}", "", nil, 1, 0, 1, 1, 1}, "INTEGER PRIMARY KEY"},
		{"finish set", finishSQL[2], []any{1, 1, 1, "completed", 0, "", nil, "{}", 2, 1, 1, "completed", 0, "", nil, "{}", 1}, "INTEGER PRIMARY KEY"},
		{"finish set completed", finishDoneSQL[2], []any{1, 1, 1, nil, "{}", 2, 1, 1, nil, "{}", 1}, "INTEGER PRIMARY KEY"},
		{"heartbeat", sqlHeartbeat, []any{1, "[[1,1],[2,1]]", "w", 1}, "INTEGER PRIMARY KEY"},
		{"unique holder", sqlHolder, []any{"ua"}, "INDEX jobs_unique "},
		{"fired", sqlFired, []any{"s", 1}, "INDEX jobs_fire "},
		{"retry all dead", sqlDeadAll, nil, "INDEX jobs_finished "},
		{"retry dead by ID", sqlDeadIDs, []any{"[1,2]"}, "INTEGER PRIMARY KEY"},
		{"finished since", sqlFinishedSince, []any{1}, "INDEX jobs_finished "},
		{"oldest available", sqlOldestAvailable, nil, "INDEX jobs_claim "},
		{"purge before", purge(store.PurgeParams{Before: now}), []any{"dead", 1}, "INDEX jobs_finished "},
		{"purge keep newest", purge(store.PurgeParams{KeepNewest: 5}), []any{"dead", "dead", 5}, "INDEX jobs_finished "},
		{"purge by ID", purge(store.PurgeParams{IDs: []job.ID{1, 2}, Before: now}), []any{"dead", "[1,2]", 1}, "INTEGER PRIMARY KEY"},
		{"bulk candidates", matchQuery(avail), []any{"a", "k", 10, 20, 5}, "INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"bulk finished candidates", matchQuery(done), []any{"a", 10, 20, 5}, "INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"bulk cancel", cancelSQL(avail), []any{1, "a", "k", 10, 20}, "INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"bulk delete", `DELETE FROM jobs WHERE ` + done, []any{"a", 10, 20}, "INTEGER PRIMARY KEY (rowid>? AND rowid<?)"},
		{"pending deaths", sqlPendingDeaths, []any{10}, "INDEX jobs_unnoted "},
		{"note a death", sqlNoteDeath, []any{1, 1}, "INTEGER PRIMARY KEY"},
		{"leader", sqlLeader, []any{"maintenance"}, "PRIMARY KEY (name=?)"},
		{"resign", sqlResign, []any{"maintenance", "w", 1}, "PRIMARY KEY (name=?)"},
	} {
		rows, err := s.rdb.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q.sql, q.args...)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "; ")
		t.Logf("%s: %s", q.name, all)
		if strings.Contains(all, "SCAN jobs") {
			t.Errorf("%s: full scan of jobs: %s", q.name, all)
		}
		if (q.sql == sqlReadyLanes || strings.HasPrefix(q.name, "bulk")) && strings.Contains(all, "TEMP B-TREE") {
			t.Errorf("%s: sorts (the primary key gives the order): %s", q.name, all)
		}
		if !strings.Contains(all+" ", q.uses) {
			t.Errorf("%s: plan does not use %s: %s", q.name, q.uses, all)
		}
	}
}
