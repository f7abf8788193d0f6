package pgstore

import (
	"slices"
	"strings"
	"sync"
)

// Claiming ahead (decision 108). A claim of keyed queues (keys.go) was
// three round trips: the plain claim's batch, which also lists the keyed
// queues of the claim (sqlKeyedOf); the keyed transaction's first batch
// (keyedBegin); and its claim and commit. A Store remembers, per set of
// claimed queues, the keyed queues its last claim found, and the next
// claim of that set guesses them: it sends the plain claim's transaction
// and the keyed one's first batch in one batch, one after the other
// (BEGIN … COMMIT; BEGIN …), on a connection of its own, and leaves the
// guessed queues out of the plain claim (whose statement leaves keyed
// queues out anyway). The plain transaction's list of the keyed queues,
// read as before, checks the guess:
//
//   - right, and the plain claim left room: the keyed claim goes on from
//     its first batch (two round trips where there were three);
//   - wrong (a queue became keyed, or stopped being keyed), or the plain
//     claim filled the claim: the keyed transaction is rolled back and the
//     claim goes on as without a guess; a guessed queue that is keyed no
//     longer was left out of the plain claim, so the Store claims again at
//     once (signal).
//
// The guess is made only when the last claim of the set found keyed
// queues and its plain claim did not fill it, and never for a FinishClaim
// whose outcomes hold keys (holdKeys runs between the two transactions and
// locks the queues' rows the keyed one would hold).
type keyedGuesses struct {
	mu sync.Mutex
	m  map[string][]string // claimed queues (keyedGuessKey) → keyed queues, sorted
}

// keyedGuessMax bounds the sets of claimed queues remembered; past it the
// Store forgets them all (a Store's workers claim a handful of sets).
const keyedGuessMax = 64

// keyedGuessKey is the key of the claimed queues (sorted; none: every
// queue).
func keyedGuessKey(queues []string) string {
	return strings.Join(queues, "\x00")
}

// guess returns the keyed queues to claim ahead for the claimed queues of
// key, nil for none.
func (g *keyedGuesses) guess(key string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m[key]
}

// saw records what a claim of key found: the keyed queues (sorted), and
// whether its plain claim filled it.
func (g *keyedGuesses) saw(key string, keyed []string, filled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(keyed) == 0 || filled {
		delete(g.m, key)
		return
	}
	if old, ok := g.m[key]; ok && slices.Equal(old, keyed) {
		return
	}
	if g.m == nil || len(g.m) >= keyedGuessMax {
		g.m = map[string][]string{}
	}
	g.m[key] = slices.Clone(keyed)
}
