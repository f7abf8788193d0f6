package sqlitestore

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hopperq/hopper/store"
)

var _ store.Registry = (*Store)(nil)

// The servers table (store.Registry). Registering, removing and pruning
// are write requests run by the writer goroutine like any other; listing
// reads a snapshot on the read-only pool, so a read-only Store lists too.
const (
	sqlRegisterServer = `INSERT INTO servers (id, host, pid, version, workers, started_at, heartbeat_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
			workers = excluded.workers, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`
	// sqlListServers counts the running jobs by worker once (the rows of
	// the partial index jobs_lease), not once per server. ?1 the led
	// name, ?2 now.
	sqlListServers = `SELECT s.id, s.host, s.pid, s.version, s.workers, s.started_at, s.heartbeat_at,
			coalesce(r.n, 0), EXISTS (SELECT 1 FROM leaders l WHERE l.name = ?1 AND l.holder = s.id AND l.until > ?2)
		FROM servers s
		LEFT JOIN (SELECT worker, count(*) AS n FROM jobs WHERE state = 'running' GROUP BY worker) r ON r.worker = s.id
		ORDER BY s.started_at, s.id`
)

// RegisterServer implements store.Registry: one write transaction.
func (s *Store) RegisterServer(ctx context.Context, p store.RegisterServerParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	sv := p.Server
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(sqlRegisterServer, sv.ID, sv.Host, sv.PID, sv.Version, sv.Workers,
			store.UnixNanos(sv.StartedAt), store.UnixNanos(p.Now))
		return err
	})
}

// RemoveServer implements store.Registry.
func (s *Store) RemoveServer(ctx context.Context, id string) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(`DELETE FROM servers WHERE id = ?`, id)
		return err
	})
}

// PruneServers implements store.Registry.
func (s *Store) PruneServers(ctx context.Context, p store.PruneServersParams) (int, error) {
	var n int64
	err := s.write(ctx, func(w *writer) error {
		var err error
		n, err = w.execN(`DELETE FROM servers WHERE heartbeat_at < ?`, store.UnixNanos(p.Before))
		return err
	})
	return int(n), err
}

// ListServers implements store.Registry.
func (s *Store) ListServers(ctx context.Context, p store.ListServersParams) ([]store.Server, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, sqlListServers, p.Lease, store.UnixNanos(p.Now))
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	out := []store.Server{}
	for rows.Next() {
		var sv store.Server
		var started, beat int64
		if err := rows.Scan(&sv.ID, &sv.Host, &sv.PID, &sv.Version, &sv.Workers, &started, &beat, &sv.Running, &sv.Leader); err != nil {
			return nil, s.readErr(err)
		}
		sv.StartedAt, sv.HeartbeatAt = store.FromUnixNanos(started), store.FromUnixNanos(beat)
		sv.Dead = !strings.HasPrefix(sv.ID, store.RemoteWorkerPrefix) && s.lockGone(sv.ID)
		out = append(out, sv)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// lockGone reports whether worker's lock file is gone: every Store that
// writes holds one from Open to Close, and a clean Stop removes the
// server's record before its Store closes, so a listed server without one
// is dead, found so by a peer that rescued its jobs (expireWorkers) — long
// before its heart-beat grows old.
func (s *Store) lockGone(worker string) bool {
	_, err := os.Stat(filepath.Join(s.lockDir(), lockFileName(worker)))
	return errors.Is(err, fs.ErrNotExist)
}
