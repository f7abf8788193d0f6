package pgstore_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
)

// schemaURL is the test URL with hopper_schema set.
func schemaURL(t testing.TB, schema string, extra ...string) string {
	t.Helper()
	u := testURL(t)
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	u += sep + "hopper_schema=" + schema
	for _, e := range extra {
		u += "&" + e
	}
	return u
}

// relations lists the tables, indexes, sequences and types of schema.
func relations(t *testing.T, c *pgx.Conn, schema string) []string {
	t.Helper()
	rows, err := c.Query(t.Context(), `SELECT c.relname || ':' || c.relkind::text FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1
		UNION ALL SELECT t.typname::text || ':type' FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE n.nspname = $1 AND t.typtype = 'e'
		ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestMigrateFreshAndAgain(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	c := conn(t)
	res, err := pgstore.Migrate(t.Context(), schemaURL(t, schema))
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if res.From != 0 || res.To != pgstore.SchemaVersion() || res.Schema != schema {
		t.Errorf("first Migrate: got %+v, want from 0 to %d in %s", res, pgstore.SchemaVersion(), schema)
	}
	rels := strings.Join(relations(t, c, schema), " ")
	for _, want := range []string{"jobs:r", "schedules:r", "leaders:r", "schema_migrations:r", "job_state:type",
		"jobs_claim:i", "jobs_due:i", "jobs_running:i", "jobs_finished:i", "jobs_unique:i", "jobs_fire:i"} {
		if !strings.Contains(rels, want) {
			t.Errorf("after Migrate: schema %s lacks %s (has %s)", schema, want, rels)
		}
	}
	var opts []string
	if err := c.QueryRow(t.Context(), `SELECT reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = 'jobs'`, schema).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if o := strings.Join(opts, ","); !strings.Contains(o, "autovacuum_vacuum_scale_factor") || !strings.Contains(o, "fillfactor") {
		t.Errorf("jobs reloptions: %s, want the per-table autovacuum settings and fillfactor", o)
	}
	res, err = pgstore.Migrate(t.Context(), schemaURL(t, schema))
	if err != nil || res.From != pgstore.SchemaVersion() || res.To != pgstore.SchemaVersion() {
		t.Errorf("second Migrate: got %+v, %v, want nothing to do", res, err)
	}
	// A store opened without migrating works on it.
	s := openIn(t, schema, pgstore.Options{NoMigrate: true})
	enqueue(t, s, newJob(t, "k"))
}

// TestMigrateConcurrently: several processes migrating at once all
// succeed; one of them did the work.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	var wg sync.WaitGroup
	results := make([]pgstore.MigrateResult, 4)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() { results[i], errs[i] = pgstore.Migrate(context.Background(), schemaURL(t, schema)) })
	}
	wg.Wait()
	created := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Errorf("Migrate %d: %v", i, errs[i])
		}
		if r.From == 0 {
			created++
		}
	}
	if created != 1 {
		t.Errorf("concurrent Migrate: %d created the schema, want 1 (%+v)", created, results)
	}
}

// TestMigrateRefusesNewerSchema: a schema a newer Hopper migrated is
// refused by Migrate and by every kind of Open, changing nothing.
func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	if _, err := pgstore.Migrate(t.Context(), schemaURL(t, schema)); err != nil {
		t.Fatal(err)
	}
	c := conn(t)
	open := openIn(t, schema, pgstore.Options{})
	if err := open.Ping(t.Context()); err != nil {
		t.Errorf("Ping of a current schema: %v", err)
	}
	newer := pgstore.SchemaVersion() + 1
	if _, err := c.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema}.Sanitize()+`.schema_migrations (version, name) VALUES ($1, 'future')`, newer); err != nil {
		t.Fatal(err)
	}
	if err := open.Ping(t.Context()); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Errorf("Ping once a newer Hopper migrated: got %v, want ErrSchemaTooNew", err)
	}
	before := relations(t, c, schema)
	if _, err := pgstore.Migrate(t.Context(), schemaURL(t, schema)); !errors.Is(err, pgstore.ErrSchemaTooNew) {
		t.Errorf("Migrate of a newer schema: got %v, want ErrSchemaTooNew", err)
	}
	for _, o := range []pgstore.Options{{}, {NoMigrate: true}, {ReadOnly: true}} {
		o.Schema = schema
		if s, err := pgstore.Open(t.Context(), testURL(t), o); !errors.Is(err, pgstore.ErrSchemaTooNew) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%+v) of a newer schema: got %v, want ErrSchemaTooNew", o, err)
		}
	}
	if after := relations(t, c, schema); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("refused migration changed the schema:\n%v\n%v", before, after)
	}
}

func TestOpenNoMigrateWithoutSchema(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	if s, err := pgstore.Open(t.Context(), testURL(t), pgstore.Options{Schema: schema, NoMigrate: true}); !errors.Is(err, pgstore.ErrNoSchema) {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open without migrating a missing schema: got %v, want ErrNoSchema", err)
	}
	if rels := relations(t, conn(t), schema); len(rels) != 0 {
		t.Errorf("Open with NoMigrate created %v", rels)
	}
}

// TestNoSearchPath: every statement names the schema, so a session whose
// search_path leads elsewhere (or nowhere) changes nothing, and nothing is
// created outside the schema.
func TestNoSearchPath(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	c := conn(t)
	publicBefore := relations(t, c, "public")
	u := schemaURL(t, schema, "search_path=nowhere_at_all", "hopper_pool_size=2")
	st, err := store.Open(t.Context(), u, store.OpenOptions{})
	if err != nil {
		t.Fatalf("store.Open with search_path=nowhere_at_all: %v", err)
	}
	defer st.Close()
	ids := enqueue(t, st, newJob(t, "k"), newJob(t, "k"))
	res, err := st.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 2, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
	if err != nil || len(res.Jobs) != 2 {
		t.Fatalf("Claim: got %d jobs, %v, want 2", len(res.Jobs), err)
	}
	if _, err := st.Finish(t.Context(), store.FinishParams{Now: t0, Outcomes: []store.Outcome{{ID: ids[0], Attempt: 1, Claim: 1, State: job.StateCompleted}}}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if _, err := st.Stats(t.Context(), store.StatsParams{Now: t0, FinishedSince: t0}); err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if after := relations(t, c, "public"); strings.Join(after, " ") != strings.Join(publicBefore, " ") {
		t.Errorf("public schema changed:\n%v\n%v", publicBefore, after)
	}
}
