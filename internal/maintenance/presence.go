package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hopperq/hopper/store"
)

// LeaderName is what the maintenance services lead under
// (store.LeadParams.Name): a store.Registry marks the holder of its lease
// as the leader (store.ListServersParams.Lease).
const LeaderName = leaderName

// Presence: on a store.Registry, this server's record is registered when
// the services start, registered again every third of the leader's lease
// (the elector's tick: one timer for both), and removed once the client's
// workers have stopped (Leave); the
// leader's cleaner prunes the records of servers silent for
// Config.ServerRetention.

// announce registers this server, with its heart-beat at now.
func (s *Services) announce(ctx context.Context) {
	if s.cfg.Registry == nil {
		return
	}
	p := store.RegisterServerParams{Now: s.cfg.Now(), Server: s.cfg.Server}
	s.lead.mu.Lock()
	p.Server.StartedAt = s.started
	s.lead.mu.Unlock()
	if err := s.cfg.Registry.RegisterServer(ctx, p); err != nil && ctx.Err() == nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "register server", slog.String("server", p.Server.ID), slog.String("error", err.Error()))
	}
}

// Leave keeps this server's record beating, every third of LeaderTTL,
// while the client's workers finish their jobs after Stop; the function it
// returns stops the beat and removes the record. So a stopping server
// stays listed, alive, until it is gone.
func (s *Services) Leave() (gone func()) {
	if s.cfg.Registry == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.cfg.LeaderTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.announce(ctx)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		s.withdraw()
	}
}

// withdraw removes this server's record.
func (s *Services) withdraw() {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.LeaderTTL/3)
	defer cancel()
	if err := s.cfg.Registry.RemoveServer(ctx, s.cfg.Server.ID); err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "remove server record", slog.String("server", s.cfg.Server.ID), slog.String("error", err.Error()))
	}
}

// prune deletes the records of servers silent for ServerRetention.
func (s *Services) prune(ctx context.Context) {
	if s.cfg.Registry == nil {
		return
	}
	p := store.PruneServersParams{Before: s.cfg.Now().Add(-s.cfg.ServerRetention)}
	if _, err := s.cfg.Registry.PruneServers(ctx, p); err != nil && ctx.Err() == nil {
		s.log.LogAttrs(ctx, slog.LevelError, "prune server records", slog.String("error", err.Error()))
	}
}
