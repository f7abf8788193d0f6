package sqlitestore

import "time"

// DefaultPeerInterval is the default of Options.PeerInterval.
const DefaultPeerInterval = time.Second

// Deaths implements store.DeathWatcher. Every Options.PeerInterval (1s),
// the watcher that polls the file for Wake also looks at the lock files of
// the other Stores on the file (locks.go); when one of them can be locked,
// its Store's process has died, and Deaths receives. The next Rescue, of
// any Store on the file, then expires that Store's leases (of its running
// jobs and of the leader leases it held) and rescues the jobs in one
// transaction, and removes its lock file; until a Rescue did, Deaths
// receives again at each look. A read-only Store never receives.
//
// So a server whose peer dies rescues the peer's jobs within about a
// second, not at its next rescue pass (RescueInterval) — as a server
// starting on the file does at once.
func (s *Store) Deaths() <-chan struct{} { return s.deaths }

// checkPeers signals Deaths if the lock file of another Store is not
// locked: its process died. It leaves the lock files as they are: Rescue
// does the rest.
func (s *Store) checkPeers() {
	stale := findStale(s.lockDir(), s.worker)
	if len(stale) == 0 {
		return
	}
	releaseStale(stale, false)
	select {
	case s.deaths <- struct{}{}:
	default:
	}
}
