package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/kinds"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// session is an open database and a client on it.
type session struct {
	*hopper.Client
	store *sqlitestore.Store
}

// openOpts say how to open the database.
type openOpts struct {
	// create makes the file if it does not exist; commands that only read
	// or change existing jobs leave it false and fail on a missing file.
	create     bool
	durability sqlitestore.Durability
	// config, if set, adjusts the client's configuration.
	config func(*hopper.Config)
}

// checkDBPath gives a clear error for a --db that cannot work, before the
// store tries.
func checkDBPath(path string, create bool) error {
	if path == "" {
		return usagef("--db must not be empty")
	}
	dir := filepath.Dir(path)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("database %s: directory %s does not exist", path, dir)
	case err != nil:
		return fmt.Errorf("database %s: %w", path, err)
	case !fi.IsDir():
		return fmt.Errorf("database %s: %s is not a directory", path, dir)
	}
	switch fi, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		if !create {
			return fmt.Errorf("no database at %s (it is created by hopper enqueue, schedule add, serve or demo; pass --db or set HOPPER_DB to use another)", path)
		}
	case err != nil:
		return fmt.Errorf("database %s: %w", path, err)
	case fi.IsDir():
		return fmt.Errorf("database %s is a directory, not a file", path)
	}
	return nil
}

// open opens the --db file and a client on it (not started). Close it with
// session.close.
func (a *app) open(ctx context.Context, o openOpts) (*session, error) {
	if err := checkDBPath(a.db, o.create); err != nil {
		return nil, err
	}
	st, err := sqlitestore.Open(ctx, a.db, sqlitestore.Options{Durability: o.durability})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	ws := hopper.NewWorkers()
	kinds.Register(ws)
	cfg := hopper.Config{
		Store:    st,
		Workers:  ws,
		Logger:   slog.New(slog.DiscardHandler),
		WorkerID: st.WorkerID(), // the store detects dead workers by its own ID
	}
	if o.config != nil {
		o.config(&cfg)
	}
	c, err := hopper.NewClient(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &session{Client: c, store: st}, nil
}

// close stops the client (gracefully until ctx is done) and closes the
// store, which the client does not own.
func (s *session) close(ctx context.Context) error {
	err := s.Stop(ctx)
	return errors.Join(err, s.store.Close())
}

// closeNow stops and closes without waiting for running jobs.
func (s *session) closeQuick() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.close(ctx)
}

// withSession runs fn on a session of a's database and closes it after.
func (a *app) withSession(ctx context.Context, o openOpts, fn func(*session) error) error {
	s, err := a.open(ctx, o)
	if err != nil {
		return err
	}
	defer s.closeQuick()
	return fn(s)
}
