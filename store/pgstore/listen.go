package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Wake-ups. Every write that makes jobs available, or changes when they
// will be (Enqueue, FireSchedule, Reschedule, RetryDead, Rescue, a Finish
// that releases or retries a job), is followed by one pg_notify on the
// schema's channel — never one per row — in a transaction of its own,
// right after the write commits, not inside the write's transaction:
// NOTIFY takes a database-wide lock from before its transaction's commit
// until after it, so writes that notify in their own transaction commit
// one at a time, each waiting for the previous one's WAL flush, while
// writes without NOTIFY share flushes (measured: 600µs per commit here,
// against 150µs for a NOTIFY alone, which writes no WAL). Listeners thus
// wake after the jobs are visible.
//
// Plain enqueues send BEGIN, the INSERT, COMMIT and the NOTIFY in one
// batch (one round trip). The other writes ask the notifier goroutine,
// which sends the notification after their commit and coalesces: the
// requests made while one is in flight are answered by the next one.
// EnqueueTx is the exception: its notification is part of the
// application's transaction, delivered if and when that commits.
//
// Each read-write Store LISTENs on a dedicated connection (not from the
// pool: LISTEN is session state) and signals Wake when a notification
// arrives, so a job enqueued by any process starts within milliseconds.
//
// Its own notifications come back to it too. They would wake its workers a
// second time for each write (the caller of an Enqueue wakes its own
// engine; issue 19: half the claims under a steady stream found nothing),
// so a Store tags the notifications it sends after its own commits with a
// random tag of its own (selfPrefix), and its listener passes over those:
// their floors are lowered or reset in the Store already, and a write
// whose waking the caller does not do itself (a Finish that retries or
// releases a job, a rescue, a reschedule, a resume, a schedule's fire)
// signals this Store's Wake at once instead (notifyKeys, notify). An
// enqueue's, and a claim's promotion's, wake no one here: the Client wakes
// its engine after its Enqueue, and a claim signals Wake itself when it
// lowered a floor. Notifications sent in the application's transaction
// (EnqueueTx) are not tagged: only their echo tells this process that
// the transaction committed. A Hopper without tags reads a tagged payload
// as a reset of its floors.
//
// Wake also fires every Options.PollInterval (1s) whatever happens: the
// fallback for the time the listener is down (it reconnects, backing off
// up to 5s, and signals once connected, as notifications may have been
// missed) and for writers that do not notify. With Options.PgBouncer there
// is no listener (PgBouncer's transaction mode cannot hold a LISTEN) and
// Wake is the poll alone.

// Wake implements store.Waker: the channel receives (buffered, at most one
// pending signal) when another process — or this one — committed jobs that
// may be claimable, and every Options.PollInterval. It is never closed; on
// a read-only Store it never receives.
func (s *Store) Wake() <-chan struct{} { return s.wake }

// signal wakes the Wake channel without blocking.
func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// notify asks the notifier to send a notification soon, after a write
// made jobs available whose keys it does not know: the notification, and
// this Store's floors, reset every floor (floor.go). It signals this
// Store's Wake too. It never blocks.
func (s *Store) notify() {
	s.floors.reset()
	s.keyless.clearKeys(nil)
	s.pending.Lock()
	s.pending.reset = true
	s.pending.keys = nil
	s.pending.Unlock()
	s.request()
	s.signal()
}

// notifyKeys is notify for a write that made jobs available with keys
// (and queues) known: the notification lowers the floors to them.
func (s *Store) notifyKeys(keys map[string]floorKey) {
	s.announce(keys)
	s.signal()
}

// announce is notifyKeys without the signal of this Store's Wake, for
// the writes whose waking the caller does itself (an Enqueue's: the
// Client's; a claim's promotion). It reports whether it lowered this
// Store's floors.
func (s *Store) announce(keys map[string]floorKey) bool {
	s.keyless.clearKeys(keys)
	lowered := s.floors.lower(keys)
	s.pending.Lock()
	if !s.pending.reset {
		if s.pending.keys == nil {
			s.pending.keys = make(map[string]floorKey, len(keys))
		}
		mergeKeys(s.pending.keys, keys)
	}
	s.pending.Unlock()
	s.request()
	return lowered
}

// request wakes the notifier.
func (s *Store) request() {
	select {
	case s.notifyReq <- struct{}{}:
	default: // one is pending already: it covers this request too
	}
}

// notifier sends the notifications notify asks for, one at a time, until
// the Store closes (sending the last one asked for first).
func (s *Store) notifier() {
	defer s.wg.Done()
	for {
		select {
		case <-s.notifyReq:
		case <-s.run.Done():
			select {
			case <-s.notifyReq:
				s.sendNotify(context.Background())
			default:
			}
			return
		}
		s.sendNotify(s.run)
	}
}

// sendNotify sends one notification. A failure is not reported: the
// listeners' polling covers it.
func (s *Store) sendNotify(ctx context.Context) {
	s.pending.Lock()
	payload := ""
	if !s.pending.reset {
		payload = encodePayload(s.pending.keys)
	}
	s.pending.reset, s.pending.keys = false, nil
	s.pending.Unlock()
	payload = s.selfPrefix() + payload
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.pool.Exec(ctx, sqlNotify, s.channel, payload) //nolint:errcheck // polling covers a lost notification
	s.notified()
}

// notified counts a notification sent (by the notifier or after an
// insert's commit) and calls the tests' hook.
func (s *Store) notified() {
	s.notifications.Add(1)
	if f := s.onNotify.Load(); f != nil {
		(*f)()
	}
}

// poll signals Wake every PollInterval until the Store closes.
func (s *Store) poll() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.run.Done():
			return
		case <-t.C:
			s.signal()
		}
	}
}

// Listener reconnection back-off.
const (
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// listen keeps a connection LISTENing on the channel until the Store
// closes, signalling Wake on every notification.
func (s *Store) listen() {
	defer s.wg.Done()
	retry := listenRetryMin
	for s.run.Err() == nil {
		err := s.listenOnce()
		if s.run.Err() != nil {
			return
		}
		if err == nil {
			retry = listenRetryMin
		}
		select {
		case <-s.run.Done():
			return
		case <-time.After(retry):
		}
		retry = min(2*retry, listenRetryMax)
	}
}

// listenOnce connects, LISTENs and waits for notifications until the
// connection fails or the Store closes. It returns nil if it got as far
// as listening.
func (s *Store) listenOnce() error {
	conn, err := pgx.ConnectConfig(s.run, s.listenConf)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(ctx)
		s.listening.Store(false)
	}()
	if _, err := conn.Exec(s.run, "LISTEN "+quoteIdent(s.channel)); err != nil {
		return err
	}
	s.listening.Store(true)
	// Notifications may have been missed while not listening: claims look
	// again (the keyless hints go too), and so do the cancel watchers (a
	// cancel sent before this listener was up, a new Store's first
	// moments included, would wait for the next lease renewal, 10 s by
	// default).
	s.floors.reset()
	s.keyless.clearKeys(nil)
	s.signal()
	s.cancels.Signal()
	s.upOnce.Do(func() { close(s.listenUp) })
	for {
		n, err := conn.WaitForNotification(s.run)
		if err != nil {
			return nil
		}
		payload, own := s.cutSelf(n.Payload)
		switch {
		case own: // its cancels signalled here already (cancelled)
			s.echoes.Add(1)
		case payload == cancelPayload: // another process's cancel
			s.cancels.Signal()
		default:
			keys := decodePayload(payload)
			if keys != nil {
				s.floors.lower(keys)
			} else {
				s.floors.reset()
			}
			// Another process made jobs of these queues available:
			// keyless ones, maybe (keyless.go).
			s.keyless.clearKeys(keys)
			s.heard.Add(1)
			s.signal()
		}
		if f := s.onHeard.Load(); f != nil {
			(*f)()
		}
	}
}

// Channel returns the NOTIFY channel of the Store's schema: a pg_notify on
// it (from a trigger, say) wakes every Store of the schema.
func (s *Store) Channel() string { return s.channel }

// Listening reports whether the Store's LISTEN connection is up (false
// with Options.PgBouncer and on a read-only Store).
func (s *Store) Listening() bool { return s.listening.Load() }

// cancelPayload is the notification of a cancel of a running job: the
// listeners signal WatchCancels, not Wake. It is sent after the Store's tag
// (selfPrefix), as its other notifications are: its own listener passes
// over it (cancelled signalled already), the others read the payload after
// the tag. (A Store of an older Hopper reads it as a payload it does not
// know, which wakes its claims: no harm.)
const cancelPayload = "!cancel"

// WatchCancels implements store.CancelWatcher: a cancel of a running job
// by this Store signals at once; one by another process, when its
// notification arrives. Behind PgBouncer (no LISTEN) only this Store's own
// cancels signal; the others reach their jobs at the next lease renewal.
func (s *Store) WatchCancels() (<-chan struct{}, func()) { return s.cancels.Watch() }

// cancelled tells every Store of the schema that a running job's cancel
// was requested: a notification after the cancel's commit (a lost one
// leaves the cancel to the job's next lease renewal), and this Store's
// watchers at once.
func (s *Store) cancelled(ctx context.Context) {
	s.cancels.Signal()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s.pool.Exec(ctx, sqlNotify, s.channel, s.selfPrefix()+cancelPayload) //nolint:errcheck // the lease renewal covers a lost notification
}

// newSelfTag returns a random tag for a Store's own notifications.
func newSelfTag() string {
	var b [8]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// selfPrefix is what starts the payload of each notification this Store
// sends after its own commits: "~", its tag and a newline.
func (s *Store) selfPrefix() string { return "~" + s.self + "\n" }

// cutSelf returns payload without its tag line, if it has one, and
// whether the tag is this Store's.
func (s *Store) cutSelf(payload string) (string, bool) {
	if !strings.HasPrefix(payload, "~") {
		return payload, false
	}
	tag, rest, ok := strings.Cut(payload[1:], "\n")
	if !ok {
		return payload, false
	}
	return rest, tag == s.self
}
