package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

func checkNotFound(name string) error { return fmt.Errorf("check %q: %w", name, job.ErrNotFound) }

func scanCheck(r pgx.Row) (*job.Check, error) {
	var doc []byte
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	return store.DecodeCheck(doc)
}

func scanPing(r pgx.Row) (*job.Ping, error) {
	var doc []byte
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	return store.DecodePing(doc)
}

// AddCheck implements store.Store; the unique name and ping_id refuse a
// duplicate, even from a concurrent transaction.
func (s *Store) AddCheck(ctx context.Context, c *job.Check) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := c.Check(); err != nil {
		return err
	}
	c.CreatedAt, c.LastPingAt = micro(c.CreatedAt), micro(c.LastPingAt)
	doc, err := store.EncodeCheck(c)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, s.q(`INSERT INTO {schema}.checks (name, ping_id, doc) VALUES ($1, $2, $3::jsonb)`), c.Name, c.PingID, doc)
	if isUniqueViolation(err) {
		return fmt.Errorf("check %q: %w", c.Name, job.ErrDuplicate)
	}
	return s.translate(err)
}

// GetCheck implements store.Store.
func (s *Store) GetCheck(ctx context.Context, name string) (*job.Check, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, checkNotFound(name)
	}
	c, err := scanCheck(s.pool.QueryRow(ctx, s.q(`SELECT doc FROM {schema}.checks WHERE name = $1`), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, checkNotFound(name)
	}
	if err != nil {
		return nil, s.translate(err)
	}
	return c, nil
}

// ListChecks implements store.Store.
func (s *Store) ListChecks(ctx context.Context) ([]*job.Check, error) {
	return listDocs(ctx, s, "checks", scanCheck)
}

// RemoveCheck implements store.Store.
func (s *Store) RemoveCheck(ctx context.Context, name string) error {
	if err := s.writable(); err != nil {
		return err
	}
	return s.translate(pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, s.q(`DELETE FROM {schema}.checks WHERE name = $1`), name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return checkNotFound(name)
		}
		_, err = tx.Exec(ctx, s.q(`DELETE FROM {schema}.pings WHERE check_name = $1`), name)
		return err
	}))
}

// saveCheck writes c's document in tx.
func (s *Store) saveCheck(ctx context.Context, tx pgx.Tx, c *job.Check) error {
	doc, err := store.EncodeCheck(c)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.checks SET doc = $1::jsonb WHERE name = $2`), doc, c.Name)
	return err
}

// PauseCheck implements store.Store.
func (s *Store) PauseCheck(ctx context.Context, name string, paused bool) (*job.Check, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	var out *job.Check
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		c, err := scanCheck(tx.QueryRow(ctx, s.q(`SELECT doc FROM {schema}.checks WHERE name = $1 FOR UPDATE`), name))
		if errors.Is(err, pgx.ErrNoRows) {
			return checkNotFound(name)
		}
		if err != nil {
			return err
		}
		c.SetPaused(paused)
		out = c
		return s.saveCheck(ctx, tx, c)
	})
	if err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// PingCheck implements store.Store: the check's row is locked (FOR
// UPDATE), so concurrent pings apply one after the other.
func (s *Store) PingCheck(ctx context.Context, p store.PingCheckParams) (*job.Check, *job.Ping, error) {
	if err := s.writable(); err != nil {
		return nil, nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, nil, err
	}
	var (
		outC *job.Check
		outP *job.Ping
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		c, err := scanCheck(tx.QueryRow(ctx, s.q(`SELECT doc FROM {schema}.checks WHERE ping_id = $1 FOR UPDATE`), p.PingID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("ping ID: %w", job.ErrNotFound)
		}
		if err != nil {
			return err
		}
		pg := *p.Ping
		pg.At = micro(pg.At)
		c.Apply(&pg)
		doc, err := store.EncodePing(&pg)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q(`INSERT INTO {schema}.pings (check_name, seq, doc) VALUES ($1, $2, $3::jsonb)`), c.Name, pg.Seq, doc); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q(`DELETE FROM {schema}.pings WHERE check_name = $1 AND seq <= $2`), c.Name, pg.Seq-int64(p.Keep)); err != nil {
			return err
		}
		outC, outP = c, &pg
		return s.saveCheck(ctx, tx, c)
	})
	if err != nil {
		return nil, nil, s.translate(err)
	}
	return outC, outP, nil
}

// ListPings implements store.Store.
func (s *Store) ListPings(ctx context.Context, p store.ListPingsParams) ([]*job.Ping, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return []*job.Ping{}, nil
	}
	var limit any // NULL: no limit
	if p.Limit > 0 {
		limit = p.Limit
	}
	return queryAll(ctx, s, `SELECT doc FROM {schema}.pings WHERE check_name = $1 ORDER BY seq DESC LIMIT $2`, scanPing, p.Check, limit)
}
