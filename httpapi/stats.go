package httpapi

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/statsview"
)

// statsView is the response of GET /stats, in the shape of `hopper stats
// --json` (but over the last hour, StatsWindow), with each queue's oldest
// ready job.
type statsView struct {
	statsview.Counts
	// Finished counts the jobs finished in the last hour (StatsWindow) by
	// final state.
	Finished map[string]int `json:"finished_last_hour"`
	// Throughput is the jobs completed per second in the last hour,
	// measured from the first job finished in it (hopper.Stats).
	Throughput float64 `json:"throughput_per_second"`
	// OldestAvailable maps each queue with ready jobs to the earliest
	// run-at among them.
	OldestAvailable map[string]time.Time `json:"oldest_available"`
	// At is when the counts were taken (at most Options.StatsMaxAge ago).
	At time.Time `json:"at"`
}

// stats handles GET /stats: counts by queue and state, from the client's
// stats cache (at most Options.StatsMaxAge old).
func (a *api) stats(w http.ResponseWriter, r *http.Request) error {
	if err := noBody(r); err != nil {
		return err
	}
	st, err := a.c.StatsCached(r.Context(), StatsWindow, a.maxAge)
	if err != nil {
		return err
	}
	out := statsView{
		Counts: statsview.Of(st), Finished: statsview.Finished(st), Throughput: st.Throughput, OldestAvailable: map[string]time.Time{}, At: st.At,
	}
	for q, t := range st.OldestAvailable {
		out.OldestAvailable[q] = t
	}
	reply(w, http.StatusOK, out)
	return nil
}

// HealthOptions configure Health and Ready.
type HealthOptions struct {
	// Logger receives why a readiness check failed (the response does not
	// say: it needs no token). Default: slog.Default().
	Logger *slog.Logger
	// Timeout bounds the store check of Ready (default 5s).
	Timeout time.Duration
}

// Health returns the handler of a liveness check (/healthz): 200
// {"status":"ok"} while the process serves HTTP at all. It needs no token
// and reads nothing.
func Health() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// Ready returns the handler of a readiness check (/readyz): 200
// {"status":"ok"} when c's store answers and holds the schema this build
// knows (Client.Ping), else 503 with code unavailable; the cause goes to
// the log. It needs no token.
func Ready(c *hopper.Client, o HealthOptions) http.Handler {
	log := cmp.Or(o.Logger, slog.Default())
	timeout := cmp.Or(o.Timeout, 5*time.Second)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		if err := c.Ping(ctx); err != nil {
			log.Warn("readiness check failed", "error", err)
			writeError(w, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable,
				Message: "the store does not answer or its schema is not current (see the server's log)"})
			return
		}
		reply(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}
