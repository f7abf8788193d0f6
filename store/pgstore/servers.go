package pgstore

import (
	"context"

	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5/pgtype"
)

var _ store.Registry = (*Store)(nil)

// The servers table (store.Registry): one statement per method.
const (
	sqlRegisterServer = `INSERT INTO {schema}.servers AS s (id, host, pid, version, workers, started_at, heartbeat_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, version = excluded.version,
			workers = excluded.workers, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`
	// sqlListServers counts the running jobs by worker once (the rows of
	// the partial index jobs_running), not once per server. $1 the led
	// name, $2 now.
	sqlListServers = `SELECT s.id, s.host, s.pid, s.version, s.workers, s.started_at, s.heartbeat_at,
			coalesce(r.n, 0)::bigint,
			EXISTS (SELECT 1 FROM {schema}.leaders l WHERE l.name = $1 AND l.holder = s.id AND l.lease_until > $2)
		FROM {schema}.servers s
		LEFT JOIN (SELECT worker, count(*) AS n FROM {schema}.jobs WHERE state = 'running' GROUP BY worker) r ON r.worker = s.id
		ORDER BY s.started_at, s.id`
)

// RegisterServer implements store.Registry.
func (s *Store) RegisterServer(ctx context.Context, p store.RegisterServerParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.writable(); err != nil {
		return err
	}
	sv := p.Server
	_, err := s.pool.Exec(ctx, s.q(sqlRegisterServer), sv.ID, sv.Host, sv.PID, sv.Version, sv.Workers, ts(sv.StartedAt), ts(p.Now))
	return s.translate(err)
}

// RemoveServer implements store.Registry.
func (s *Store) RemoveServer(ctx context.Context, id string) error {
	if err := s.writable(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, s.q(`DELETE FROM {schema}.servers WHERE id = $1`), id)
	return s.translate(err)
}

// PruneServers implements store.Registry.
func (s *Store) PruneServers(ctx context.Context, p store.PruneServersParams) (int, error) {
	if err := s.writable(); err != nil {
		return 0, err
	}
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM {schema}.servers WHERE heartbeat_at < $1`), ts(p.Before))
	if err != nil {
		return 0, s.translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// ListServers implements store.Registry. A read-only Store of a database
// without Hopper's schema lists none.
func (s *Store) ListServers(ctx context.Context, p store.ListServersParams) ([]store.Server, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	out := []store.Server{}
	if s.empty {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q(sqlListServers), p.Lease, ts(p.Now))
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var sv store.Server
		var started, beat pgtype.Timestamptz
		var running int64
		if err := rows.Scan(&sv.ID, &sv.Host, &sv.PID, &sv.Version, &sv.Workers, &started, &beat, &running, &sv.Leader); err != nil {
			return nil, s.translate(err)
		}
		sv.StartedAt, sv.HeartbeatAt, sv.Running = fromTS(started), fromTS(beat), int(running)
		out = append(out, sv)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}
