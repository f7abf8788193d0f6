package engine

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/hopperq/hopper/store"
)

// heartbeat renews the leases of the attempts running in this engine every
// third of the lease, cancels those whose cancellation another process
// requested, and stops those whose lease was lost (the job was rescued while
// this process was frozen, say): another worker may run them now, and their
// outcomes will not be written.
//
// A store that tells of cancels promptly (store.CancelWatcher) makes it
// renew at once when a running job's cancel was requested, here or in
// another process: the request reaches the handler in milliseconds, not
// at the next renewal. cancels is its watch (nil without one), taken by run
// before any job starts.
func (e *Engine) heartbeat(ctx context.Context, p *pool, cancels <-chan struct{}) {
	t := time.NewTicker(e.cfg.LeaseDuration / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.idle:
			return
		case <-t.C:
		case <-cancels:
		}
		ls := e.leases()
		if len(ls) == 0 {
			continue
		}
		now := e.cfg.Now()
		res, err := e.cfg.Store.Heartbeat(ctx, store.HeartbeatParams{
			Now: now, Worker: e.cfg.Worker, Jobs: ls, LeaseUntil: now.Add(e.cfg.LeaseDuration),
		})
		if err != nil {
			if ctx.Err() == nil {
				e.log.LogAttrs(ctx, slog.LevelError, "renew leases", slog.String("error", err.Error()))
			}
			continue
		}
		for _, id := range res.Cancel {
			if slices.Contains(res.Terminate, id) {
				e.TerminateRunning(id)
			} else {
				e.CancelRunning(id)
			}
		}
		for _, l := range res.Lost {
			// An attempt whose handler returned since ls was read is
			// not running here any more: its outcome was written
			// meanwhile (the usual case with short jobs), or will be
			// refused, which the completer logs.
			if e.loseLease(l) {
				e.log.LogAttrs(ctx, slog.LevelWarn, "job lease lost: stopping its handler",
					slog.Int64("job", int64(l.ID)), slog.Int64("claim", l.Claim))
			}
		}
	}
}
