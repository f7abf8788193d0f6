package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
	_ "github.com/hopperq/hopper/store/sqlitestore" // sqlite:
)

// result is what one in-process run of the hopper command did.
type result struct {
	out, err string
	code     int
	t        *testing.T
}

// hop runs the hopper command in-process against db.
func hop(t *testing.T, db string, args ...string) result {
	t.Helper()
	return hopIn(t, db, "", args...)
}

// hopIn is hop with stdin.
func hopIn(t *testing.T, db, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"--db", db}, args...), IO{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return result{out.String(), errOut.String(), code, t}
}

// ok fails unless r exited 0.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.out, r.err)
	}
	return r
}

// fails fails unless r exited with code and its stderr holds every want.
func (r result) fails(t *testing.T, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.out, r.err)
	}
	if !strings.HasPrefix(r.err, "hopper: ") || strings.HasPrefix(r.err, "hopper: hopper ") {
		t.Errorf("stderr does not start with one \"hopper: \": %q", r.err)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			t.Errorf("stderr %q lacks %q", r.err, w)
		}
	}
}

// has fails unless r's stdout holds every want.
func (r result) has(t *testing.T, want ...string) result {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(r.out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.out)
		}
	}
	return r
}

// decode parses r's stdout as JSON into v.
func (r result) decode(v any) {
	t := r.t
	t.Helper()
	reflect.ValueOf(v).Elem().SetZero() // Unmarshal would reuse what v points to
	if err := json.Unmarshal([]byte(r.out), v); err != nil {
		t.Fatalf("stdout is not the JSON wanted: %v\n%s", err, r.out)
	}
}

// id parses r's stdout as a job ID.
func (r result) id(t *testing.T) hopper.ID {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(r.out), 10, 64)
	if err != nil {
		t.Fatalf("stdout %q is not a job ID (stderr %q)", r.out, r.err)
	}
	return hopper.ID(n)
}

func newDB(t *testing.T) string { return filepath.Join(t.TempDir(), "hopper.db") }

// getJob returns job id as jobs get --json shows it.
func getJobJSON(t *testing.T, db string, id hopper.ID) *hopper.Job {
	t.Helper()
	var j hopper.Job
	hop(t, db, "jobs", "get", "--json", strconv.FormatInt(int64(id), 10)).ok(t).decode(&j)
	return &j
}

// work runs the jobs ids on db with a client of the built-in kinds until
// each is finished, and returns them.
func work(t *testing.T, db string, ids ...hopper.ID) []*hopper.Job {
	t.Helper()
	return workQueues(t, db, nil, ids...)
}

// workQueues is work with a client working only queues (nil: all).
func workQueues(t *testing.T, db string, queues []string, ids ...hopper.ID) []*hopper.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws := hopper.NewWorkers()
	kinds.Register(ws)
	cfg := hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)}
	for _, q := range queues {
		if cfg.Queues == nil {
			cfg.Queues = map[string]hopper.QueueConfig{}
		}
		cfg.Queues[q] = hopper.QueueConfig{}
	}
	c, err := hopper.Open(ctx, "sqlite:"+db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	var out []*hopper.Job
	for _, id := range ids {
		j, err := c.Wait(ctx, id)
		if err != nil {
			t.Fatalf("waiting for job %d: %v", id, err)
		}
		out = append(out, j)
	}
	return out
}

func idArg(id hopper.ID) string { return strconv.FormatInt(int64(id), 10) }
