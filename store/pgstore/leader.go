package pgstore

import (
	"context"

	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5/pgtype"
)

// sqlLead is store.Leader.Lead in one statement: insert the lease, or take
// it over if it expired (a new term), or renew it if $2 holds it unexpired
// (the same term). When another holds it, the upsert changes nothing and
// the row as it was is read instead. $1 name, $2 holder, $3 now, $4 the
// new deadline.
const sqlLead = `WITH up AS (
		INSERT INTO {schema}.leaders AS l (name, holder, term, lease_until) VALUES ($1, $2, 1, $4)
		ON CONFLICT (name) DO UPDATE SET
			holder = excluded.holder,
			term = CASE WHEN l.holder = excluded.holder AND l.lease_until > $3 THEN l.term ELSE l.term + 1 END,
			lease_until = excluded.lease_until
		WHERE l.lease_until <= $3 OR l.holder = excluded.holder
		RETURNING holder, term, lease_until)
	SELECT holder, term, lease_until FROM up
	UNION ALL
	SELECT holder, term, lease_until FROM {schema}.leaders WHERE name = $1 AND NOT EXISTS (SELECT 1 FROM up)`

// Lead implements store.Leader: one lease row per name in the leaders
// table, renewed by its holder, taken over once expired (the term grows by
// one), fenced by the term. Times are the callers' (the client stamps them
// with Now, the server's clock).
func (s *Store) Lead(ctx context.Context, p store.LeadParams) (store.LeadResult, error) {
	if err := s.writable(); err != nil {
		return store.LeadResult{}, err
	}
	now := micro(p.Now)
	var (
		res   store.LeadResult
		until pgtype.Timestamptz
	)
	err := s.pool.QueryRow(ctx, s.q(sqlLead), p.Name, p.Holder, ts(now), ts(now.Add(p.TTL))).Scan(&res.Holder, &res.Term, &until)
	if err != nil {
		return store.LeadResult{}, s.translate(err)
	}
	res.Until = fromTS(until)
	res.Leader = res.Holder == p.Holder
	return res, nil
}

// Resign implements store.Leader: the lease of p.Name expires at once if
// p.Holder holds it in term p.Term; the next Lead takes it over in a new
// term.
func (s *Store) Resign(ctx context.Context, p store.LeadParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, s.q(`UPDATE {schema}.leaders SET lease_until = '-infinity'
		WHERE name = $1 AND holder = $2 AND term = $3`), p.Name, p.Holder, p.Term)
	return s.translate(err)
}
