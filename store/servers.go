package store

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
)

// Registry is implemented by stores that keep a record of the servers —
// started clients — working them, so that any process can list who is
// alive, who leads and what each runs (hopper servers). Every store of
// this module implements it. A server registers when it starts, registers
// again as its heart-beat (every few seconds), and removes its record when
// it stops cleanly; the leader prunes the records of servers that stopped
// beating long ago.
type Registry interface {
	// RegisterServer records p.Server with its heart-beat at p.Now,
	// replacing the record of the same ID (its Running and Leader are
	// ignored). A Server that fails ServerParams.Validate changes nothing.
	RegisterServer(ctx context.Context, p RegisterServerParams) error
	// RemoveServer deletes the record of server id, if there is one.
	RemoveServer(ctx context.Context, id string) error
	// PruneServers deletes the records whose last heart-beat is before
	// p.Before, and returns how many it deleted.
	PruneServers(ctx context.Context, p PruneServersParams) (int, error)
	// ListServers returns every record, earliest start first (then by ID),
	// each with Running, the number of running jobs whose Worker is its ID,
	// and Leader, whether it holds the lease of p.Lease (store.Leader)
	// unexpired at p.Now.
	ListServers(ctx context.Context, p ListServersParams) ([]Server, error)
}

// RemoteWorkerPrefix starts the ID of every remote worker's record (a
// program that runs jobs over the HTTP worker protocol, registered by a
// client: hopper.Client.RegisterWorker). Such a worker is no process of
// the store's: a store that tells dead processes by means of its own
// (SQLite's lock files) leaves Dead false for it, and its jobs are rescued
// when their leases expire.
const RemoteWorkerPrefix = "remote:"

// Server is the record of one server: a started client.
type Server struct {
	// ID is the client's worker ID: the Worker of the jobs it runs.
	ID      string
	Host    string // the host name it runs on
	PID     int    // its process ID
	Version string // Hopper's version in its build
	Workers int    // its worker pool's size (Config.Concurrency)
	// StartedAt is when it started; HeartbeatAt when it last registered
	// (RegisterServerParams.Now).
	StartedAt   time.Time
	HeartbeatAt time.Time
	// Running and Leader are set by ListServers only.
	Running int
	Leader  bool
	// Dead is set by ListServers when the store knows the server's process
	// has ended, whatever its last heart-beat says: on SQLite, its lock
	// file is gone (a peer found it unlocked and rescued its jobs). A store
	// that cannot tell leaves it false.
	Dead bool
}

// RegisterServerParams are the arguments of Registry.RegisterServer.
type RegisterServerParams struct {
	Now    time.Time // the heart-beat
	Server Server
}

// Validate returns a *job.FieldError unless p's server is one every store
// can keep: an ID, a PID and a worker count that are not negative, and a
// start time. Stores call it before they change anything.
func (p RegisterServerParams) Validate() error {
	s := p.Server
	switch {
	case s.ID == "":
		return job.Invalid("id", "must not be empty")
	case s.PID < 0:
		return job.Invalid("pid", "must not be negative, got %d", s.PID)
	case s.Workers < 0:
		return job.Invalid("workers", "must not be negative, got %d", s.Workers)
	case s.StartedAt.IsZero():
		return job.Invalid("started_at", "must be set")
	}
	return nil
}

// PruneServersParams are the arguments of Registry.PruneServers.
type PruneServersParams struct {
	Before time.Time // records whose last heart-beat is before it go
}

// ListServersParams are the arguments of Registry.ListServers.
type ListServersParams struct {
	Now   time.Time
	Lease string // the led name (LeadParams.Name) whose holder is the Leader
}
