package pgstore

import (
	"context"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5/pgtype"
)

// sqlKeepOutputs records the outputs of a round of a Finish call, before
// its sqlFinish in the same transaction and under the same fence (the job
// still running the claim, $11, of the attempt), replacing an earlier
// run's of the same attempt number; the job's schedule is read from its
// row. The arrays are in ID order, as sqlFinish locks the rows ($10: now).
var sqlKeepOutputs = `INSERT INTO {schema}.attempt_outputs (job_id, attempt, schedule, succeeded, finished_at,
		stdout, stdout_size, stderr, stderr_size, log, log_size)
	SELECT j.id, o.att, j.schedule, o.ok, $10, o.so, o.sos, o.se, o.ses, o.lg, o.lgs
	FROM unnest($1::bigint[], $2::int[], $3::bool[], $4::bytea[], $5::bigint[], $6::bytea[], $7::bigint[],
			$8::bytea[], $9::bigint[], $11::bigint[]) WITH ORDINALITY AS o(id, att, ok, so, sos, se, ses, lg, lgs, claim, n)
		JOIN {schema}.jobs j ON j.id = o.id AND j.state::text = 'running' AND j.claims = o.claim AND j.attempt = o.att
	ORDER BY o.n
	ON CONFLICT (job_id, attempt) DO UPDATE SET schedule = excluded.schedule, succeeded = excluded.succeeded,
		finished_at = excluded.finished_at, stdout = excluded.stdout, stdout_size = excluded.stdout_size,
		stderr = excluded.stderr, stderr_size = excluded.stderr_size, log = excluded.log, log_size = excluded.log_size`

// outputArrays are the arguments of one sqlKeepOutputs statement.
type outputArrays struct {
	ids, claims                     []int64
	atts                            []int32
	ok                              []bool
	stdout, stderr, log             [][]byte
	stdoutSize, stderrSize, logSize []int64
}

// outputs returns the arrays of the outputs of r's outcomes (of the call's
// outcomes), in r's order, and notes that r has some; nil if none has one.
func (r *finishArrays) outputs(outcomes []store.Outcome) *outputArrays {
	var a *outputArrays
	for _, i := range r.index {
		o := outcomes[i]
		p := o.Output
		if p == nil {
			continue
		}
		if a == nil {
			a = &outputArrays{}
		}
		a.ids = append(a.ids, int64(o.ID))
		a.atts = append(a.atts, int32(o.Attempt))
		a.claims = append(a.claims, o.Claim)
		a.ok = append(a.ok, o.State == job.StateCompleted) // a success wins over a requested cancel
		a.stdout, a.stdoutSize = append(a.stdout, p.Stdout), append(a.stdoutSize, p.StdoutSize)
		a.stderr, a.stderrSize = append(a.stderr, p.Stderr), append(a.stderrSize, p.StderrSize)
		a.log, a.logSize = append(a.log, p.Log), append(a.logSize, p.LogSize)
	}
	r.hasOutput = a != nil
	return a
}

// Outputs implements store.Store.
func (s *Store) Outputs(ctx context.Context, p store.OutputsParams) ([]*job.Output, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT attempt, coalesce(schedule, ''), succeeded, finished_at,
			stdout, stdout_size, stderr, stderr_size, log, log_size
		FROM {schema}.attempt_outputs WHERE job_id = $1 AND ($2 <= 0 OR attempt = $2) ORDER BY attempt`),
		int64(p.ID), int32(p.Attempt))
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var out []*job.Output
	for rows.Next() {
		var (
			att      int32
			sched    string
			ok       bool
			finished pgtype.Timestamptz
			pk       store.PackedOutput
		)
		if err := rows.Scan(&att, &sched, &ok, &finished, &pk.Stdout, &pk.StdoutSize, &pk.Stderr, &pk.StderrSize,
			&pk.Log, &pk.LogSize); err != nil {
			return nil, s.translate(err)
		}
		o, err := pk.Unpack(p.ID, int(att))
		if err != nil {
			return nil, err
		}
		o.Schedule, o.Succeeded, o.FinishedAt = sched, ok, fromTS(finished)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// sqlPruneOutputs deletes the outputs of schedule $1 beyond the newest $2
// successes and $3 failures, and those finished before $4 (if not NULL).
var sqlPruneOutputs = `DELETE FROM {schema}.attempt_outputs d USING (
		SELECT job_id, attempt, finished_at, succeeded,
			row_number() OVER (PARTITION BY succeeded ORDER BY finished_at DESC, job_id DESC, attempt DESC) AS n
		FROM {schema}.attempt_outputs WHERE schedule = $1) r
	WHERE d.job_id = r.job_id AND d.attempt = r.attempt
		AND (r.finished_at < $4 OR (r.succeeded AND r.n > $2) OR (NOT r.succeeded AND r.n > $3))`

// PruneOutputs implements store.Store.
func (s *Store) PruneOutputs(ctx context.Context, p store.PruneOutputsParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	var cutoff pgtype.Timestamptz // NULL: no age limit
	if p.Keep.MaxAge > 0 {
		cutoff = ts(p.Now.Add(-p.Keep.MaxAge))
	}
	tag, err := s.pool.Exec(ctx, s.q(sqlPruneOutputs), p.Schedule, p.Keep.Succeeded, p.Keep.Failed, cutoff)
	if err != nil {
		return 0, s.translate(err)
	}
	return int(tag.RowsAffected()), nil
}
