package sqlitestore

import (
	"context"
	"fmt"

	"github.com/hopperq/hopper/store"
)

var _ store.Pinger = (*Store)(nil)

// Ping implements store.Pinger: it reads the file's header through the read
// pool, and fails unless the file answers and holds this build's schema: a
// read-only Store of a file that has none yet answers store.ErrNoSchema.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.errIfClosed(); err != nil {
		return err
	}
	if s.rdb == nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, store.ErrNoSchema) // read-only, no file yet
	}
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return s.readErr(err)
	}
	defer conn.Close()
	f, err := readFileInfo(conn)
	if err != nil {
		return s.readErr(err)
	}
	if f.empty() {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, store.ErrNoSchema)
	}
	if err := s.checkKind(f); err != nil {
		return err
	}
	return s.checkCurrent(f)
}
