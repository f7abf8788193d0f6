package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hopperq/hopper/store"
)

// leaderName is what the maintenance services lead under.
const leaderName = "maintenance"

// leadership is what this process knows of its lease.
type leadership struct {
	mu    sync.Mutex
	term  int64
	until time.Time // zero: not leading
}

// leading reports whether this process may act at now: it always may
// without a Leader; with one, while its lease runs — with a margin of a
// tenth of the lease, so that a renewal that cannot reach the store stops
// the services before another process may take over.
func (s *Services) leading(now time.Time) bool {
	if s.cfg.Leader == nil {
		return true
	}
	s.lead.mu.Lock()
	defer s.lead.mu.Unlock()
	return now.Before(s.lead.until.Add(-s.cfg.LeaderTTL / 10))
}

// Leading reports whether this process runs the maintenance services now.
func (s *Services) Leading() bool { return s.leading(s.cfg.Now()) }

// elector asks for (or renews) the lease, and registers this server, every
// third of the lease, and holds an election when electNow receives.
func (s *Services) elector(ctx context.Context) {
	t := time.NewTicker(s.cfg.LeaderTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.beat(ctx)
		case <-s.electNow:
			if s.cfg.Leader != nil {
				s.elect(ctx)
			}
		}
	}
}

// beat registers this server, then runs a round of the election.
func (s *Services) beat(ctx context.Context) {
	s.announce(ctx)
	if s.cfg.Leader != nil {
		s.elect(ctx)
	}
}

// elect runs one round of the election and logs a change of leader.
func (s *Services) elect(ctx context.Context) {
	now := s.cfg.Now()
	res, err := s.cfg.Leader.Lead(ctx, store.LeadParams{Now: now, Name: leaderName, Holder: s.cfg.Holder, TTL: s.cfg.LeaderTTL})
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "leader election", slog.String("error", err.Error()))
		}
		return // a lease we hold runs out by itself
	}
	s.lead.mu.Lock()
	was := s.lead.until.After(now)
	if res.Leader {
		s.lead.term, s.lead.until = res.Term, res.Until
	} else {
		s.lead.term, s.lead.until = 0, time.Time{}
	}
	s.lead.mu.Unlock()
	switch {
	case res.Leader && !was:
		s.log.LogAttrs(ctx, slog.LevelInfo, "leading maintenance", slog.Int64("term", res.Term), slog.String("holder", s.cfg.Holder))
		s.tookLead()
	case !res.Leader && was:
		s.log.LogAttrs(ctx, slog.LevelWarn, "no longer leading maintenance", slog.String("leader", res.Holder), slog.Int64("term", res.Term))
	}
}

// resign gives the lease up at Stop, so another process takes over at once.
func (s *Services) resign() {
	if s.cfg.Leader == nil {
		return
	}
	s.lead.mu.Lock()
	term := s.lead.term
	s.lead.term, s.lead.until = 0, time.Time{}
	s.lead.mu.Unlock()
	if term == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.LeaderTTL/3)
	defer cancel()
	if err := s.cfg.Leader.Resign(ctx, store.LeadParams{Now: s.cfg.Now(), Name: leaderName, Holder: s.cfg.Holder, Term: term}); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "resign leadership", slog.String("error", err.Error()))
	}
}
