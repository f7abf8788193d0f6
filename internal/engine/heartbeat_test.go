package engine

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/internal/logtest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// hbGatedStore holds its first Heartbeat call until gate closes, after
// signalling entered: the heart-beat has read the running attempts.
type hbGatedStore struct {
	store.Store
	entered, gate chan struct{}
	calls         int
}

func (s *hbGatedStore) Heartbeat(ctx context.Context, p store.HeartbeatParams) (store.HeartbeatResult, error) {
	if s.calls++; s.calls == 1 {
		close(s.entered)
		<-s.gate
	}
	return s.Store.Heartbeat(ctx, p)
}

// TestHeartbeatAfterFinishIsQuiet: a renewal that reads an attempt as
// running, and reaches the store after the attempt's handler returned and
// its outcome was written, gets the claim back as lost; that is no lost
// lease — nothing is stopped and no warning is logged. (With jobs of a few
// milliseconds every renewal met some: "job lease lost" warnings by the
// dozen in a healthy run.)
func TestHeartbeatAfterFinishIsQuiet(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &hbGatedStore{Store: memstore.New(), entered: make(chan struct{}), gate: make(chan struct{})}
		res := enqueueK(t, st, time.Now(), 1, 3)
		var logs logtest.Buffer
		release := make(chan struct{})
		e := New(Config{Store: st, Workers: 1, Kinds: []string{"k"}, LeaseDuration: 3 * time.Second,
			Now: time.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			Resolve: func(*job.Job) (Handler, Settings, error) {
				return func(context.Context, *job.Job) ([]byte, error) { <-release; return nil, nil }, Settings{}, nil
			}})
		e.Start()
		defer e.Stop(context.Background())
		<-st.entered // the renewal read the running attempt and waits at the store
		close(release)
		synctest.Wait() // the handler returned, the outcome is written
		j, err := st.Get(context.Background(), res[0].ID)
		if err != nil || j.State != job.StateCompleted {
			t.Fatalf("job: %v, %v; want completed before the renewal reaches the store", j, err)
		}
		close(st.gate)
		synctest.Wait()
		if lines := logs.Lines("lease lost"); len(lines) > 0 {
			t.Errorf("a renewal that came after the job's own Finish logged %q", lines)
		}
	})
}
