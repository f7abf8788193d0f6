package cli

import (
	"bytes"
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/jackc/pgx/v5"
)

// TestDBURL: --db takes a store URL or a bare path (a SQLite file).
func TestDBURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hopper.db")
	for _, db := range []string{"sqlite:" + path, "sqlite://" + path, path, "sqlite:" + path + "?durability=normal", "SQLITE:" + path} {
		hop(t, db, "enqueue", "exec", "--", "true").ok(t)
	}
	if got := hop(t, path, "jobs", "count").ok(t).out; got != "5\n" {
		t.Fatalf("the URLs and the path named different files: count %q", got)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "hopper.db") {
			t.Errorf("unexpected file %s: a URL was taken as a path", e.Name())
		}
	}

	// Clear errors, whatever the form.
	missing := filepath.Join(dir, "no", "such", "dir", "hopper.db")
	hop(t, "sqlite:"+missing, "enqueue", "exec", "true").fails(t, 1, "directory "+filepath.Join(dir, "no", "such", "dir")+" does not exist")
	hop(t, "sqlite:"+filepath.Join(dir, "nope.db"), "jobs", "list").fails(t, 1, "no database at "+filepath.Join(dir, "nope.db"))
	// Every bad URL is a usage error (exit 2), whatever the store would
	// have refused it for, and nothing is created.
	hop(t, "mysql://localhost/hopper", "jobs", "list").fails(t, 2, "--db", `unknown scheme "mysql"`, "postgres", "sqlite")
	hop(t, "postgress://localhost/hopper", "enqueue", "exec", "true").fails(t, 2, "--db", `unknown scheme "postgress"`)
	hop(t, "postgres://localhost/db?hopper_schem=x", "jobs", "list").fails(t, 2, "--db", `unknown parameter "hopper_schem"`)
	hop(t, "postgres://localhost/db?hopper_schema=1x", "migrate").fails(t, 2, "--db", "hopper_schema")
	hop(t, "postgres://localhost/db?sslmode=bogus", "jobs", "list").fails(t, 2, "--db", "sslmode is invalid")
	if r := hop(t, "mysql://app:s3cret@localhost/hopper", "jobs", "list"); strings.Contains(r.err, "s3cret") {
		t.Errorf("the error shows the URL's password: %q", r.err)
	}
	hop(t, "postgres://127.0.0.1:1/hopper?sslmode=disable&connect_timeout=5", "jobs", "list").fails(t, 1, "127.0.0.1:1")
	hop(t, "sqlite:"+path+"?journal=off", "jobs", "list").fails(t, 2, "--db", `unknown parameter "journal"`)
	hop(t, "sqlite:", "jobs", "list").fails(t, 2, "--db", "no file path")
	// A misspelt scheme is not a new file; a path to a file of that name is.
	hop(t, "sqlit:x.db", "enqueue", "exec", "--", "true").fails(t, 2, "--db", `unknown scheme "sqlit"`, "./sqlit:x.db")
	hop(t, filepath.Join(dir, "sqlit:x.db"), "enqueue", "exec", "--", "true").ok(t)
	hop(t, filepath.Join(dir, "a?b.db"), "jobs", "list").fails(t, 2, "--db", `"?"`)
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Fatal("a directory was created")
	}
}

// TestHopperDBEnv: HOPPER_DB takes a URL too. It sets the environment, so
// it cannot run in parallel.
func TestHopperDBEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "env.db")
	t.Setenv("HOPPER_DB", "sqlite:"+path)
	var out, errOut bytes.Buffer
	if code := Run(context.Background(), []string{"migrate"}, IO{In: strings.NewReader(""), Out: &out, Err: &errOut}); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("HOPPER_DB=sqlite:%s: %v", path, err)
	}
}

// TestMigrate: hopper migrate creates a database, upgrades an older schema
// (which read-only commands refuse, asking for it), and does nothing the
// second time.
func TestMigrate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "new.db")
	hop(t, db, "migrate").ok(t).has(t, "database "+db+": schema created")
	hop(t, db, "migrate").ok(t).has(t, "schema up to date")
	var m map[string]string
	hop(t, db, "migrate", "--json").ok(t).decode(&m)
	if m["schema"] != "up to date" || m["database"] != db {
		t.Fatalf("migrate --json: %v", m)
	}
	hop(t, db, "jobs", "list").ok(t)

	old := filepath.Join(dir, "v1.db")
	writeV1(t, old)
	before, _ := os.ReadFile(old)
	hop(t, old, "jobs", "list").fails(t, 1, "older", "hopper migrate")
	if after, _ := os.ReadFile(old); !bytes.Equal(before, after) {
		t.Fatal("a read-only command changed a file of an older schema")
	}
	hop(t, old, "migrate").ok(t).has(t, "schema migrated")
	hop(t, old, "jobs", "list").ok(t)
	hop(t, old, "migrate").ok(t).has(t, "schema up to date")

	hop(t, filepath.Join(dir, "nodir", "x.db"), "migrate").fails(t, 1, "does not exist")
}

// writeV1 writes a database of schema version 1: the first migration only.
func writeV1(t *testing.T, path string) {
	t.Helper()
	ddl, err := os.ReadFile(filepath.Join("..", "..", "store", "sqlitestore", "migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path) // modernc.org/sqlite, linked by sqlitestore
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{string(ddl), "PRAGMA application_id = 1213157458", "PRAGMA user_version = 1"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.40s: %v", q, err)
		}
	}
}

// TestPostgresSchemaMustExist: on PostgreSQL, a schema that does not exist
// (a misspelt hopper_schema) is an error for the commands that read or
// change what exists, as a missing SQLite file is — never an empty store —
// and none of them creates it; the commands that add work create it.
func TestPostgresSchemaMustExist(t *testing.T) {
	t.Parallel()
	db := pgtest.StoreURL(t, 2) // a fresh schema, dropped at the end
	schema := mustQuery(t, db, "hopper_schema")
	exists := func() bool {
		t.Helper()
		c, err := pgx.Connect(context.Background(), pgtest.ServerURL(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		var ok bool
		if err := c.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	want := []string{`no Hopper schema "` + schema + `"`, "created by hopper migrate"}
	for _, args := range [][]string{
		{"jobs", "list"},
		{"jobs", "count"},
		{"jobs", "get", "1"},
		{"stats"},
		{"dlq", "list"},
		{"schedule", "list"},
		{"jobs", "cancel", "1"},
		{"jobs", "reschedule", "1", "--delay", "1h"},
		{"dlq", "purge", "--all"},
		{"dlq", "retry", "--all"},
		{"schedule", "pause", "s"},
	} {
		hop(t, db, args...).fails(t, 1, want...)
	}
	if exists() {
		t.Fatalf("a command that does not add work created schema %s", schema)
	}
	hop(t, db, "enqueue", "--delay", "1h", "exec", "true").ok(t)
	hop(t, db, "jobs", "count").ok(t).has(t, "1")
	hop(t, db, "jobs", "cancel", "1").ok(t)
}

// mustQuery returns the query parameter name of URL u.
func mustQuery(t *testing.T, u, name string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query().Get(name)
}
