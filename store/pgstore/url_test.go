package pgstore_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url      string
		wantConn string
		want     pgstore.Options
		wantErr  string
	}{
		{url: "postgres://u@h:5432/db", wantConn: "postgres://u@h:5432/db"},
		{url: "postgresql://u@h/db?sslmode=disable", wantConn: "postgresql://u@h/db?sslmode=disable"},
		{url: "POSTGRES://u@h/db", wantConn: "postgres://u@h/db"},
		{
			url:      "postgres://u@h/db?sslmode=require&hopper_schema=jobs&pool_max_conns=3&hopper_pgbouncer=true",
			wantConn: "postgres://u@h/db?pool_max_conns=3&sslmode=require",
			want:     pgstore.Options{Schema: "jobs", PgBouncer: true},
		},
		{
			url:      "postgres://u@h/db?hopper_migrate=false&hopper_poll_interval=250ms&hopper_pool_size=7",
			wantConn: "postgres://u@h/db",
			want:     pgstore.Options{NoMigrate: true, PollInterval: 250 * time.Millisecond, PoolSize: 7},
		},
		{url: "postgres://u@h/db?hopper_pgbouncer=false&hopper_migrate=true", wantConn: "postgres://u@h/db"},
		{url: "postgres://u@h/db?hopper_vacuum=false", wantConn: "postgres://u@h/db", want: pgstore.Options{NoVacuum: true}},
		{url: "postgres://u@h/db?hopper_schemas=x", wantErr: `unknown parameter "hopper_schemas"`},
		{url: "postgres://u@h/db?hopper_pgbouncer=yes", wantErr: "want true or false"},
		{url: "postgres://u@h/db?hopper_poll_interval=0s", wantErr: "positive duration"},
		{url: "postgres://u@h/db?hopper_pool_size=0", wantErr: "positive number"},
		{url: "postgres://u@h/db?hopper_schema=1abc", wantErr: "not starting with a digit"},
		{url: "postgres://u@h/db?hopper_schema=a-b", wantErr: "letters, digits and underscores"},
		{url: "postgres://u@h/db?hopper_schema=pg_x", wantErr: "reserved"},
		{url: "postgres://u@h/db?hopper_schema=" + strings.Repeat("s", 51), wantErr: "longer than 50 bytes"},
		{url: "sqlite:hopper.db", wantErr: "want the scheme postgres://"},
		{url: "mysql://u:secret@h/db", wantErr: "want the scheme postgres://"},
		{url: "postgres://u:secret@h/db?hopper_x=1", wantErr: "unknown parameter"},
		{url: "postgres://u:secret@h:port/db", wantErr: "cannot parse"},
	} {
		conn, opts, err := pgstore.ParseURL(tc.url)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseURL(%q): got %q, %v, want error containing %q", tc.url, conn, err, tc.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseURL(%q): error %q shows the password", tc.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseURL(%q): %v", tc.url, err)
			continue
		}
		if conn != tc.wantConn || opts.Schema != tc.want.Schema || opts.PgBouncer != tc.want.PgBouncer ||
			opts.NoMigrate != tc.want.NoMigrate || opts.PollInterval != tc.want.PollInterval || opts.PoolSize != tc.want.PoolSize ||
			opts.NoVacuum != tc.want.NoVacuum {
			t.Errorf("ParseURL(%q):\n got %q %+v\nwant %q %+v", tc.url, conn, opts, tc.wantConn, tc.want)
		}
	}
}

func TestSchemesRegistered(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"postgres", "postgresql"} {
		if !slices.Contains(store.Schemes(), s) {
			t.Errorf("store.Schemes() = %v: want %s registered", store.Schemes(), s)
		}
	}
}

// TestOpenByURL opens stores through store.Open, with Hopper's parameters
// in the URL, and sees them applied.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	base := testURL(t)
	schema := freshSchema(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	u := base + sep + "hopper_schema=" + schema + "&hopper_pool_size=2&hopper_poll_interval=20ms"
	st, err := store.Open(t.Context(), u, store.OpenOptions{Worker: "w-url"})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	defer st.Close()
	s := st.(*pgstore.Store)
	if s.Schema() != schema || s.WorkerID() != "w-url" || s.Pool().Config().MaxConns != 2 {
		t.Errorf("got schema %q worker %q pool %d, want %q w-url 2", s.Schema(), s.WorkerID(), s.Pool().Config().MaxConns, schema)
	}
	enqueue(t, s, newJob(t, "k"))
	// The poll interval: Wake fires without any notification.
	for range 2 {
		select {
		case <-s.Wake():
		case <-time.After(10 * time.Second):
			t.Fatal("Wake did not fire within 10s with hopper_poll_interval=20ms")
		}
	}
	ro, err := store.Open(t.Context(), "postgresql"+strings.TrimPrefix(u, "postgres"), store.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("store.Open read-only (postgresql://): %v", err)
	}
	defer ro.Close()
	if n, err := ro.Count(t.Context(), store.ListParams{}); err != nil || n != 1 {
		t.Errorf("Count through the read-only store: got %d, %v, want 1", n, err)
	}
}
