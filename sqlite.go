package hopper

import (
	"context"
	"fmt"

	"github.com/hopperq/hopper/store/sqlitestore"
)

// OpenSQLite opens (creating if needed) the SQLite file at path and returns
// a client on it: Hopper's durable default, one file and no server. A job
// Enqueue acknowledged is on disk (fsynced) and survives a crash; a restart
// carries on where the process died. The client owns the store: Stop closes
// it. cfg.Store must be nil; cfg.WorkerID, if set, names the process in
// leases.
//
// Several processes may open the same file: they share the work, and no job
// is run by two of them at once. A job enqueued by another process starts
// within about 50ms.
func OpenSQLite(ctx context.Context, path string, cfg Config) (*Client, error) {
	if cfg.Store != nil {
		return nil, &FieldError{Field: "Config.Store", Reason: "must be nil: OpenSQLite opens the store"}
	}
	st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{Worker: cfg.WorkerID})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	cfg.Store = st
	cfg.WorkerID = st.WorkerID()
	c, err := NewClient(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}
