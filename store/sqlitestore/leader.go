package sqlitestore

import (
	"context"

	"github.com/hopperq/hopper/store"
)

var _ store.Leader = (*Store)(nil)

// Leader election. The leases are rows of the leaders table (name, holder,
// term, until in Unix nanoseconds); Lead and Resign are write requests like
// any other, run by the writer goroutine in a group-commit transaction and
// answered once it has committed. So a lease is granted under SQLite's
// write lock — two processes asking at once are serialised, the second sees
// the first's lease — and a granted lease is durable.
const (
	// sqlLead gives lease ?1 to holder ?2 until ?4 if it is free (no row),
	// expired (until <= now, ?3) or ?2's. The SET expressions read the row
	// as it was: the term stays only for a renewal, an unexpired lease of
	// ?2's; any other grant is a take-over and starts the next term.
	sqlLead = `INSERT INTO leaders (name, holder, term, until) VALUES (?1, ?2, 1, ?4)
		ON CONFLICT (name) DO UPDATE SET
			term = CASE WHEN holder = ?2 AND until > ?3 THEN term ELSE term + 1 END,
			holder = ?2, until = ?4
		WHERE holder = ?2 OR until <= ?3`
	sqlLeader = `SELECT holder, term, until FROM leaders WHERE name = ?`
	// sqlResign ends the lease now; the holder and term stay, so the next
	// grant is a new term.
	sqlResign = `UPDATE leaders SET until = 0 WHERE name = ? AND holder = ? AND term = ?`
)

// Lead implements store.Leader: of the processes (Stores) sharing the
// file, one at a time holds the lease of p.Name. The grant or renewal is
// one write transaction; Lead returns once it has committed. A Store
// opened with Options.ReadOnly fails with ErrReadOnly.
func (s *Store) Lead(ctx context.Context, p store.LeadParams) (store.LeadResult, error) {
	now, until := store.UnixNanos(p.Now), store.UnixNanos(p.Now.Add(p.TTL))
	var res store.LeadResult
	err := s.write(ctx, func(w *writer) error {
		if _, err := w.exec(sqlLead, p.Name, p.Holder, now, until); err != nil {
			return err
		}
		var holder string
		var term, until int64
		if err := w.scanRow(sqlLeader, []any{p.Name}, &holder, &term, &until); err != nil {
			return err
		}
		res = store.LeadResult{Leader: holder == p.Holder, Holder: holder, Term: term, Until: store.FromUnixNanos(until)}
		return nil
	})
	if err != nil {
		return store.LeadResult{}, err
	}
	return res, nil
}

// Resign implements store.Leader: it ends the lease of p.Name if p.Holder
// holds it in term p.Term, so that the next Lead by any process takes over
// at once, in a new term. Otherwise it changes nothing.
func (s *Store) Resign(ctx context.Context, p store.LeadParams) error {
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(sqlResign, p.Name, p.Holder, p.Term)
		return err
	})
}
