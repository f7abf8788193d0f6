package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func checkNotFound(name string) error { return fmt.Errorf("check %q: %w", name, job.ErrNotFound) }

func scanCheck(r scanner) (*job.Check, error) {
	var doc string
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	return store.DecodeCheck([]byte(doc))
}

func scanPing(r scanner) (*job.Ping, error) {
	var doc string
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	return store.DecodePing([]byte(doc))
}

// AddCheck implements store.Store.
func (s *Store) AddCheck(ctx context.Context, c *job.Check) error {
	if err := c.Check(); err != nil {
		return err
	}
	c.CreatedAt = store.FromUnixNanos(store.UnixNanos(c.CreatedAt))
	c.LastPingAt = store.FromUnixNanos(store.UnixNanos(c.LastPingAt))
	doc, err := store.EncodeCheck(c)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		var n int
		if err := w.conn.QueryRowContext(bg, `SELECT count(*) FROM checks WHERE name = ? OR ping_id = ?`, c.Name, c.PingID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("check %q: %w", c.Name, job.ErrDuplicate)
		}
		_, err := w.exec(`INSERT INTO checks (name, ping_id, doc) VALUES (?, ?, ?)`, c.Name, c.PingID, doc)
		return err
	})
}

// GetCheck implements store.Store.
func (s *Store) GetCheck(ctx context.Context, name string) (*job.Check, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	c, err := scanCheck(s.rdb.QueryRowContext(ctx, `SELECT doc FROM checks WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, checkNotFound(name)
	}
	if err != nil {
		return nil, s.readErr(err)
	}
	return c, nil
}

// ListChecks implements store.Store.
func (s *Store) ListChecks(ctx context.Context) ([]*job.Check, error) {
	return listDocs(ctx, s, "checks", scanCheck)
}

// RemoveCheck implements store.Store.
func (s *Store) RemoveCheck(ctx context.Context, name string) error {
	return s.write(ctx, func(w *writer) error {
		n, err := w.execN(`DELETE FROM checks WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n == 0 {
			return checkNotFound(name)
		}
		_, err = w.exec(`DELETE FROM pings WHERE check_name = ?`, name)
		return err
	})
}

// saveCheck writes c's document in w's transaction.
func saveCheck(w *writer, c *job.Check) error {
	doc, err := store.EncodeCheck(c)
	if err != nil {
		return err
	}
	_, err = w.exec(`UPDATE checks SET doc = ? WHERE name = ?`, doc, c.Name)
	return err
}

// PauseCheck implements store.Store.
func (s *Store) PauseCheck(ctx context.Context, name string, paused bool) (*job.Check, error) {
	var out *job.Check
	err := s.write(ctx, func(w *writer) error {
		c, err := scanCheck(w.conn.QueryRowContext(bg, `SELECT doc FROM checks WHERE name = ?`, name))
		if errors.Is(err, sql.ErrNoRows) {
			return checkNotFound(name)
		}
		if err != nil {
			return err
		}
		c.SetPaused(paused)
		out = c
		return saveCheck(w, c)
	})
	return out, err
}

// PingCheck implements store.Store, through the checks' unique ping_id.
func (s *Store) PingCheck(ctx context.Context, p store.PingCheckParams) (*job.Check, *job.Ping, error) {
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	var (
		outC *job.Check
		outP *job.Ping
	)
	err := s.write(ctx, func(w *writer) error {
		c, err := scanCheck(w.conn.QueryRowContext(bg, `SELECT doc FROM checks WHERE ping_id = ?`, p.PingID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("ping ID: %w", job.ErrNotFound)
		}
		if err != nil {
			return err
		}
		pg := *p.Ping
		pg.At = store.FromUnixNanos(store.UnixNanos(pg.At))
		c.Apply(&pg)
		doc, err := store.EncodePing(&pg)
		if err != nil {
			return err
		}
		if _, err := w.exec(`INSERT INTO pings (check_name, seq, doc) VALUES (?, ?, ?)`, c.Name, pg.Seq, doc); err != nil {
			return err
		}
		if _, err := w.exec(`DELETE FROM pings WHERE check_name = ? AND seq <= ?`, c.Name, pg.Seq-int64(p.Keep)); err != nil {
			return err
		}
		outC, outP = c, &pg
		return saveCheck(w, c)
	})
	if err != nil {
		return nil, nil, err
	}
	return outC, outP, nil
}

// ListPings implements store.Store.
func (s *Store) ListPings(ctx context.Context, p store.ListPingsParams) ([]*job.Ping, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT doc FROM pings WHERE check_name = ? ORDER BY seq DESC LIMIT ?`, p.Check, limit)
	if err != nil {
		return nil, s.readErr(err)
	}
	out, err := appendRows([]*job.Ping{}, rows, scanPing)
	if err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}
