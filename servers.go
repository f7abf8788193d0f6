package hopper

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/hopperq/hopper/internal/maintenance"
	"github.com/hopperq/hopper/store"
)

// How servers know of each other (Client.Servers). A started client
// registers itself in the store and renews its record with the leader's
// lease, every third of leaderTTL.
const (
	// serverTTL is how long a server's record stays alive without a
	// heart-beat: three missed beats.
	serverTTL = leaderTTL
	// serverRetention is how long the record of a server that stopped
	// beating is kept (listed as gone) before the leader prunes it.
	serverRetention = time.Hour
)

// ServerInfo describes a server: a started Client working the store, in
// this process or another. Client.Servers lists them.
type ServerInfo struct {
	// ID is the server's worker ID (Client.WorkerID): the Worker of the
	// jobs it runs.
	ID      string `json:"id"`
	Host    string `json:"host"`    // the host name it runs on
	PID     int    `json:"pid"`     // its process ID on that host
	Version string `json:"version"` // Hopper's version in its build ("devel" when unknown)
	Workers int    `json:"workers"` // its worker pool's size (Config.Concurrency)
	// StartedAt is when it started; HeartbeatAt when it last renewed its
	// record (every few seconds while it runs).
	StartedAt   time.Time `json:"started_at"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
	// Alive reports whether its last heart-beat is recent (within 10s) and
	// the store has not found its process dead (SQLite: its lock file,
	// within about a second of a kill -9; store.Server.Dead). A
	// server that stopped cleanly is not listed at all; one that died or
	// lost the store stays listed, not alive, for an hour.
	Alive bool `json:"alive"`
	// Leader reports whether it runs the maintenance services now (rescue,
	// retention, schedules): at most one server does at a time.
	Leader bool `json:"leader"`
	// Running is how many jobs the store has running under its ID.
	Running int `json:"running"`
	// Remote reports a remote worker (Client.RegisterWorker): a program
	// in any language working over the HTTP worker protocol, whose Host
	// is "NAME@HOST" as it registered and whose Workers are its slots.
	Remote bool `json:"remote"`
}

// Servers lists the servers working the store — started clients, in any
// process — earliest start first, as the store records them: this
// client's own once it has started, and, for an hour, those that stopped
// beating without a clean Stop (Alive false). It fails with
// errors.ErrUnsupported on a store that keeps no such record
// (store.Registry; every built-in store does), and with ErrClientStopped
// (an ErrClosed) after Stop.
func (c *Client) Servers(ctx context.Context) ([]ServerInfo, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	if c.registry == nil {
		return nil, fmt.Errorf("servers: the store keeps no record of servers: %w", errors.ErrUnsupported)
	}
	now := c.now()
	recs, err := c.registry.ListServers(ctx, store.ListServersParams{Now: now, Lease: maintenance.LeaderName})
	if err != nil {
		return nil, fmt.Errorf("list servers: %w", err)
	}
	out := make([]ServerInfo, len(recs))
	for i, r := range recs {
		out[i] = ServerInfo{
			ID: r.ID, Host: r.Host, PID: r.PID, Version: r.Version, Workers: r.Workers,
			StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt, Alive: !r.Dead && now.Sub(r.HeartbeatAt) < serverTTL,
			Leader: r.Leader, Running: r.Running, Remote: strings.HasPrefix(r.ID, store.RemoteWorkerPrefix),
		}
	}
	return out, nil
}

// Leading reports whether this client is started and runs the maintenance
// services now: the leader among the servers sharing its store (or alone
// on a store that elects none).
func (c *Client) Leading() bool {
	c.mu.Lock()
	started := c.state == clientStarted
	c.mu.Unlock()
	return started && c.maint.Leading()
}

// serverRecord is this client's record as a server, but for its start time.
func (c *Client) serverRecord() store.Server {
	host, _ := os.Hostname()
	return store.Server{ID: c.cfg.WorkerID, Host: host, PID: os.Getpid(), Version: hopperVersion(), Workers: c.cfg.Concurrency}
}

// modulePath is Hopper's module path.
const modulePath = "github.com/hopperq/hopper"

// hopperVersion is Hopper's version in this build, as the Go toolchain
// recorded it: the module's version when Hopper is the main module or a
// dependency, "devel" when built from its tree without a version.
var hopperVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return moduleVersion(info)
})

// moduleVersion returns Hopper's version in info, "devel" if it has none.
func moduleVersion(info *debug.BuildInfo) string {
	m := &info.Main
	if m.Path != modulePath {
		m = nil
		for _, d := range info.Deps {
			if d.Path == modulePath {
				m = d
				if d.Replace != nil {
					m = d.Replace
				}
				break
			}
		}
	}
	if m == nil || m.Version == "" || m.Version == "(devel)" {
		return "devel"
	}
	return m.Version
}
