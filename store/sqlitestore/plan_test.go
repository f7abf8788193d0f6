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
		j := &job.Job{Kind: "k", Queue: []string{"a", "b", "c"}[i%3], Priority: i % 5, RunAt: now.Add(time.Duration(i%7-3) * time.Minute)}
		if i%10 == 0 {
			j.UniqueKey = "u" + string(rune('a'+i/10))
		}
		if err := j.Validate(now, 3); err != nil {
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
	for _, q := range []struct {
		name, sql string
		args      []any
	}{
		{"promote all", sqlPromoteAll, []any{1}},
		{"promote queue", sqlPromoteQueue, []any{"a", 1}},
		{"candidates", sqlCandidates, []any{"a", 10}},
		{"claim", sqlClaim, []any{1, "w", 2, "me", "[1,2,3]"}},
		{"claim 1 queue", claimSQL[1], []any{1, "w", 2, "me", 10, "a", 10}},
		{"claim 3 queues", claimSQL[3], []any{1, "w", 2, "me", 10, "a", 10, "b", 5, "c", 10}},
		{"next run all", sqlNextRunAll, nil},
		{"next run queue", sqlNextRunQueue, []any{"a"}},
		{"rescue", sqlRescue, []any{1}},
		{"expire dead worker", sqlExpireWorker, []any{"w"}},
		{"finish", sqlFinish, []any{5, "{}", "", nil, 1, 0, 1, 1}},
		{"finish set", finishSQL[2], []any{1, 1, 5, 0, "", nil, "{}", 2, 1, 5, 0, "", nil, "{}", 1}},
		{"heartbeat", sqlHeartbeat, []any{1, "[1,2]", "w"}},
		{"unique holder", sqlHolder, []any{"ua"}},
		{"fired", sqlFired, []any{"s", 1}},
		{"retry all dead", sqlDeadAll, nil},
		{"finished since", sqlFinishedSince, []any{1}},
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
		if !strings.Contains(all, "jobs") {
			t.Errorf("%s: plan does not mention jobs: %s", q.name, all)
		}
	}
}
