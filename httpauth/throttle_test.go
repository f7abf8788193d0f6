package httpauth

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/internal/logtest"
)

// counter counts the reasons OnFailure reports.
type counter struct {
	mu sync.Mutex
	by map[string]int
}

func (c *counter) add(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by == nil {
		c.by = map[string]int{}
	}
	c.by[reason]++
}

func (c *counter) get(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[reason]
}

// TestThrottle: beyond MaxFailures failed authentications in a window,
// an address's requests with a token, and its sign-ins, get a
// ThrottledError with the time left in the window, the valid ones too (a
// guess is not checked); its sessions keep working, other addresses are
// not affected, and the next window starts afresh.
func TestThrottle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var failures counter
		a := auth(t, "ops=admin:"+opsSecret)
		a.MaxFailures, a.FailureWindow, a.OnFailure = 3, time.Minute, failures.add
		const attacker = "198.51.100.7:4000"
		session, err := a.NewSession(request("", "", attacker), opsSecret)
		if err != nil {
			t.Fatal(err)
		}
		bad := func(remote string) error {
			_, err := a.Allow(request("Bearer wrong-secret-0123456789", "", remote), Read)
			return err
		}
		for i := range 3 {
			if err := bad(attacker); !errors.Is(err, ErrBadToken) {
				t.Fatalf("failure %d: %v, want ErrBadToken", i+1, err)
			}
		}
		time.Sleep(20 * time.Second)
		err = bad("198.51.100.7:5000") // another port, same address
		var te *ThrottledError
		if !errors.As(err, &te) || !errors.Is(err, ErrThrottled) || te.RetryAfter != 40*time.Second || te.RetryAfterSeconds() != 40 {
			t.Fatalf("failure 4: %v, want throttled for 40s", err)
		}
		// An invalid session (a tab left open past its session's end, say)
		// is refused as such, as is a missing token.
		if _, err := a.Allow(request("", "1.bm8.1.x.y", attacker), Read); !errors.Is(err, ErrBadSession) {
			t.Errorf("a forged session from the address: %v", err)
		}
		if _, err := a.Allow(request("", "", attacker), Read); !errors.Is(err, ErrNoToken) {
			t.Errorf("no token from the address: %v", err)
		}
		// A sign-in is refused likewise.
		if _, err := a.NewSession(request("", "", attacker), "wrong-secret-0123456789"); !errors.As(err, &te) {
			t.Errorf("a bad sign-in from the address: %v", err)
		}
		// Valid tokens and sign-ins from the address are not checked
		// either: a guess that would be right is refused like the others.
		if _, err := a.Allow(request("Bearer "+opsSecret, "", attacker), Admin); !errors.As(err, &te) {
			t.Errorf("a valid token from the address: %v, want throttled", err)
		}
		if _, err := a.NewSession(request("", "", attacker), opsSecret); !errors.As(err, &te) {
			t.Errorf("a sign-in from the address: %v, want throttled", err)
		}
		// A session signed in before keeps working: it is not guessed.
		if p, err := a.Allow(request("", session.Value, attacker), Admin); err != nil || p.Name != "ops" {
			t.Errorf("a session from the address: %v", err)
		}
		if err := bad("203.0.113.9:4000"); !errors.Is(err, ErrBadToken) {
			t.Errorf("another address: %v", err)
		}
		// IPv6 addresses count by /64.
		for range 3 {
			bad("[2001:db8:1:2::1]:80")
		}
		if err := bad("[2001:db8:1:2:ffff::9]:80"); !errors.As(err, &te) {
			t.Errorf("the same /64: %v", err)
		}
		if err := bad("[2001:db8:1:3::1]:80"); !errors.Is(err, ErrBadToken) {
			t.Errorf("another /64: %v", err)
		}
		time.Sleep(40 * time.Second)
		if err := bad(attacker); !errors.Is(err, ErrBadToken) {
			t.Errorf("the next window: %v", err)
		}
		if got := failures.get(ReasonThrottled); got != 5 {
			t.Errorf("%d throttled failures reported, want 5", got)
		}
		if got := failures.get(ReasonNoToken); got != 1 {
			t.Errorf("%d no-token failures reported, want 1", got)
		}

		off := auth(t, "ops=admin:"+opsSecret)
		off.MaxFailures = -1
		for range 50 {
			if _, err := off.Allow(request("Bearer wrong-secret-0123456789", "", attacker), Read); !errors.Is(err, ErrBadToken) {
				t.Fatalf("MaxFailures -1: %v", err)
			}
		}
	})
}

// TestFailureLogs: failures are logged, a burst a minute, then one line
// counts the rest at the end of the minute; no line holds a secret.
func TestFailureLogs(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var buf logtest.Buffer
		a := auth(t, "ops=read:"+opsSecret)
		a.Logger = slog.New(slog.NewTextHandler(&buf, nil))
		a.MaxFailures = -1
		for i := range 1000 {
			secret := "wrong-secret-" + strings.Repeat("x", 10) + string(rune('a'+i%26))
			a.Allow(request("Bearer "+secret, "", "198.51.100.7:4000"), Read)
		}
		a.Allow(request("Bearer "+opsSecret, "", "198.51.100.7:4000"), Write) // 403
		lines := func() []string { return buf.Lines() }
		if got := lines(); len(got) != logBurst {
			t.Fatalf("%d lines logged during the burst, want %d", len(got), logBurst)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		got := lines()
		if len(got) != logBurst+1 || !strings.Contains(got[logBurst], "count=981") || !strings.Contains(got[logBurst], "bad_token=980 scope=1") {
			t.Fatalf("after the minute: %d lines, the last %q", len(got), got[len(got)-1])
		}
		if !strings.Contains(got[0], "reason=bad_token") || !strings.Contains(got[0], "remote=198.51.100.7:4000") {
			t.Errorf("a failure line: %s", got[0])
		}
		// The next minute logs again.
		a.Allow(request("", "", "198.51.100.7:4000"), Read)
		if got := lines(); len(got) != logBurst+2 || !strings.Contains(got[logBurst+1], "reason=no_token") {
			t.Errorf("the next minute: %q", got[len(got)-1])
		}
		for _, l := range lines() {
			if strings.Contains(l, "wrong-secret") || strings.Contains(l, opsSecret) {
				t.Errorf("a line holds a secret: %s", l)
			}
		}
	})
}
