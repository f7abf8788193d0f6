package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// Hooks for the tests of package pgstore_test.

// HoldWriter makes the group writer wait before it takes its next batch,
// calls queued after each Enqueue it queues, and returns the function that
// lets it go. Call it before any Enqueue.
func HoldWriter(s *Store, queued func()) (release func()) {
	hold := make(chan struct{})
	s.w.queued = queued
	s.w.hold.Store(&hold)
	return func() { close(hold) }
}

// InsertStatements returns how many INSERT statements the Store has sent.
func InsertStatements(s *Store) int64 { return s.insertStmts.Load() }

// ListenUp returns a channel closed once the Store's listener first
// LISTENed.
func ListenUp(s *Store) <-chan struct{} { return s.listenUp }

// Notifications returns how many notifications the Store's notifier has
// sent.
func Notifications(s *Store) int64 { return s.notifications.Load() }

// Echoes returns how many of its own notifications the Store's listener
// passed over.
func Echoes(s *Store) int64 { return s.echoes.Load() }

// Heard returns how many notifications of others the Store's listener
// signalled Wake for.
func Heard(s *Store) int64 { return s.heard.Load() }

// OnHeard sets a function the listener calls after each notification.
func OnHeard(s *Store, f func()) { s.onHeard.Store(&f) }

// VacuumOnce runs one round of the self-vacuum.
func VacuumOnce(s *Store) (bool, error) { return s.vacuumOnce(context.Background()) }

// OnNotify makes the notifier call f after each notification it sends.
func OnNotify(s *Store, f func()) { s.onNotify.Store(&f) }

// Statements returns the SQL of the hot-path statements, for the plan
// tests: name → SQL (for this Store's schema).
func Statements(s *Store) map[string]string {
	// The bulk actions' batches, filtered by a queue and a state a partial
	// index covers: $1 after, $2 last, $3 limit, $4 the queue; and the
	// cancel of the candidates found ($1 IDs, $2 now).
	avail, _ := matchCTE(store.MatchParams{Queue: "q", UpTo: 1}, []job.State{job.StateAvailable})
	done, _ := matchCTE(store.MatchParams{Queue: "q", UpTo: 1}, []job.State{job.StateCompleted})
	return map[string]string{
		"candidates":      s.q(candidatesSQL(avail)),
		"cancelids":       s.q(sqlCancelIDs + jobColsOf("j")),
		"deletematching":  s.q(`WITH ` + done + sqlDeleteMatching),
		"promote":         s.q(sqlPromote[1]),
		"promote/all":     s.q(sqlPromote[0]),
		"claim":           s.q(sqlClaim[1][0][1][0]),
		"claim/one":       s.q(sqlClaim[1][1][1][0]),
		"claim/all":       s.q(sqlClaim[0][0][0][0]),
		"nextrun":         s.q(sqlNextRun[1]),
		"nextrun/all":     s.q(sqlNextRun[0]),
		"finish":          s.q(sqlFinish),
		"finish/handover": s.q(sqlFinishHandOver),
		"nestedloops":     sqlNestedLoops,
		"claimplan":       sqlClaimPlan,
		"heartbeat":       s.q(sqlHeartbeat),
		"rescue":          s.q(sqlRescue),
		"insert":          s.q(sqlInsert),
		"queuecounts":     s.q(sqlQueueCountsLive),
		"finishedsince":   s.q(sqlFinishedSince),
		"pendingdeaths":   s.q(sqlPendingDeaths),
		"notedeaths":      s.q(sqlNoteDeaths),
		"keybatch":        s.q(sqlKeyBatch[0]),
		"keybatchupto":    s.q(sqlKeyBatch[1]),
		"keyedfast":       s.q(sqlKeyedFast),
		"keyedclaim":      s.q(sqlKeyedClaim),
		"keyedof":         s.q(sqlKeyedOf),
		"deadids":         s.q(sqlDeadIDs),
	}
}

// Probe runs the floors' probe of queues (nil: every queue with jobs) and
// returns each queue's lowest available key as "priority/run-at µs/ID",
// or "none".
func Probe(s *Store, queues []string) (map[string]string, error) {
	keys, err := s.probe(queues)
	out := make(map[string]string, len(keys))
	for q, k := range keys {
		out[q] = "none"
		if k != lastKey {
			out[q] = fmt.Sprintf("%d/%d/%d", k.priority, k.runAt, k.id)
		}
	}
	return out, err
}

// Floor returns where the next claim of queue starts on s:
// "priority/run-at µs/ID", "front", or "unknown".
func Floor(s *Store, queue string) string {
	s.floors.mu.Lock()
	defer s.floors.mu.Unlock()
	k, ok := s.floors.known[queue]
	switch {
	case !ok:
		return "unknown"
	case !k.set:
		return "front"
	}
	return fmt.Sprintf("%d/%d/%d", k.priority, k.runAt, k.id)
}

// ResetFloors forces s's next claim to read the fronts, as RetryDead or a
// notification without keys does.
func ResetFloors(s *Store) { s.floors.reset() }

// KeylessReads returns how many keyless reads (sqlKeylessJobs) the Store's
// keyed claims have sent.
func KeylessReads(s *Store) int64 { return s.keylessReads.Load() }

// SetKeylessClock sets the clock of the Store's keyless hints.
func SetKeylessClock(s *Store, now func() time.Time) {
	s.keyless.mu.Lock()
	defer s.keyless.mu.Unlock()
	s.keyless.now = now
}

// KeylessRecheckMin is the least life of a keyless hint.
const KeylessRecheckMin = keylessRecheckMin

// AheadClaims returns the keyed claims of s that went on from a guessed
// first batch (keyahead.go).
func AheadClaims(s *Store) int64 { return s.aheadClaims.Load() }

// FastClaims returns how many keyed claims the Store made in one round
// trip (keyfast.go).
func FastClaims(s *Store) int64 { return s.fastClaims.Load() }

// FastPick runs, in tx, the keyed claim of queue alone in one round trip
// (sqlKeyedFast) for p, its room p.Limit: the jobs it claimed, in order
// (none: the walk was not plain), and whether keys at their limit held
// jobs back.
func FastPick(ctx context.Context, s *Store, tx pgx.Tx, p store.ClaimParams, queue string) ([]*job.Job, bool, error) {
	var kinds []string
	if len(p.Kinds) > 0 {
		kinds = dedupe(p.Kinds)
	}
	b := &pgx.Batch{}
	b.Queue(s.q(sqlLockKeyedQueues), []string{queue})
	s.queueKeyedFast(b, p, queue, p.Limit, kinds)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, false, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, false, err
	}
	return scanKeyedFast(rows)
}

// WalkPick returns, in tx, the walk's pick (store.KeyWalk) of the keyed
// claim of queue alone for p, as claimKeyed makes it, claiming nothing,
// and whether it is plain: one sqlKeyedFast would have made.
func WalkPick(ctx context.Context, s *Store, tx pgx.Tx, p store.ClaimParams, queue string) (store.KeyPick, bool, error) {
	var kinds []string
	if len(p.Kinds) > 0 {
		kinds = dedupe(p.Kinds)
	}
	b := &pgx.Batch{}
	b.Queue(s.q(sqlLockKeyedQueues), []string{queue})
	b.Queue(s.q(sqlKeyedThrottle), queue)
	s.queueKeyRun(b, queue, nil, "", keyBatchSize(p.Limit), p.Limit, kinds)
	br := tx.SendBatch(ctx, b)
	qs, err := lockKeyed(br, p, []string{queue})
	if err != nil {
		br.Close()
		return store.KeyPick{}, false, err
	}
	th, err := scanKeyedThrottle(br.QueryRow())
	if err != nil {
		br.Close()
		return store.KeyPick{}, false, err
	}
	rows, err := br.Query()
	if err != nil || len(qs) == 0 {
		br.Close()
		return store.KeyPick{}, false, err
	}
	q := &qs[0]
	r := newKeyReads(ctx, s, tx, q, kinds, p.Limit)
	err = r.scanRun(rows, q.cursor, "")
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		th, err = s.throttleKeyed(ctx, tx, q, th, p.Now)
	}
	if err != nil {
		return store.KeyPick{}, false, err
	}
	n := min(p.Limit, q.free)
	if n <= 0 {
		return store.KeyPick{}, false, nil
	}
	pick, err := r.walk(n, p).Pick()
	return pick, plainPick(q, th != nil, r, n, pick), err
}

// FastMisses returns how many keyed claims tried one round trip and went
// the walk's way (keyfast.go).
func FastMisses(s *Store) int64 { return s.fastMisses.Load() }
