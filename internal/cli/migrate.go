package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hopperq/hopper/store"
	"github.com/spf13/cobra"
)

func (a *app) migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create the database or bring its schema up to date",
		Long: `Create the database if it does not exist, or upgrade its schema to this
version of Hopper. "hopper serve", enqueue, schedule add and demo do both
too. The other commands that change jobs (jobs cancel, dlq retry, ...)
upgrade an existing database but never create one: where there is none, or
--db names a PostgreSQL schema that does not exist, they fail. The commands
that only read (jobs list, stats, ...) never write, so on a database of an
older schema they ask for this command. Running it again does nothing.
Several processes may run it at once.`,
		Example: "  hopper migrate\n  hopper --db sqlite:/var/lib/hopper/hopper.db migrate",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.migrate(cmd.Context())
		},
	}
}

// migrate opens the database read-write, which applies the schema, after a
// read-only look that tells what there was to do.
func (a *app) migrate(ctx context.Context) error {
	db, err := parseDB(a.db, a.dbFrom())
	if err != nil {
		return err
	}
	what := "up to date"
	if db.path != "" {
		if err := checkDBPath(db.path, true); err != nil {
			return err
		}
		if fi, err := os.Stat(db.path); err != nil || fi.Size() == 0 {
			what = "created"
		}
	}
	if what != "created" {
		ro, err := store.Open(ctx, db.url, store.OpenOptions{ReadOnly: true})
		switch {
		case errors.Is(err, store.ErrSchemaTooOld):
			what = "migrated"
		case err != nil:
			return fmt.Errorf("open database: %w", err)
		default:
			if p, ok := ro.(store.Pinger); ok && errors.Is(p.Ping(ctx), store.ErrNoSchema) {
				what = "created"
			}
			ro.Close()
		}
	}
	st, err := store.Open(ctx, db.url, store.OpenOptions{})
	if err != nil {
		return fmt.Errorf("migrate database: %w", err)
	}
	if err := st.Close(); err != nil {
		return err
	}
	if a.json {
		return printJSON(a.Out, map[string]string{"database": db.name(), "schema": what})
	}
	fmt.Fprintf(a.Out, "database %s: schema %s\n", db.name(), what)
	return nil
}
