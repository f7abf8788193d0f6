package hopper

import (
	"context"

	"github.com/hopperq/hopper/store"
)

// Open opens the store that url names and returns a client on it that owns
// it: Stop closes the store. The store's backend must be registered, which
// importing its package does:
//
//	import _ "github.com/hopperq/hopper/store/sqlitestore"
//
//	client, err := hopper.Open(ctx, "sqlite:app.db", hopper.Config{Workers: ws})
//
// "sqlite:PATH" is Hopper's durable default: one file, no server; a job
// Enqueue acknowledged is on disk (fsynced) and survives a crash, and
// several processes may share the file. See each backend's package for its
// URL form. cfg.Store must be nil; cfg.WorkerID, if set, names the process
// in leases.
func Open(ctx context.Context, url string, cfg Config) (*Client, error) {
	if cfg.Store != nil {
		return nil, &FieldError{Field: "Config.Store", Reason: "must be nil: Open opens the store"}
	}
	st, err := store.Open(ctx, url, store.OpenOptions{Worker: cfg.WorkerID})
	if err != nil {
		return nil, err
	}
	cfg.Store = st
	c, err := NewClient(cfg)
	if err != nil {
		st.Close()
		return nil, err
	}
	c.owned = true
	return c, nil
}
