package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Durability says when a write is acknowledged relative to the disk.
type Durability int

const (
	// DurabilityFull (the default): WAL with synchronous=FULL. Every
	// transaction's WAL frames are fsynced before its methods return, so an
	// acknowledged write survives a process crash, an OS crash and a power
	// loss (as far as the disk honours fsync).
	DurabilityFull Durability = iota
	// DurabilityNormal: WAL with synchronous=NORMAL. Commits are written to
	// the WAL but not fsynced (the WAL is synced only at checkpoints), so an
	// acknowledged write survives the process being killed (kill -9: the
	// data is in the OS page cache), but the last transactions before a
	// power loss or OS crash may be lost. The file is never corrupted either
	// way: it comes back as of an earlier commit.
	DurabilityNormal
)

// String returns "full" or "normal".
func (d Durability) String() string {
	if d == DurabilityNormal {
		return "normal"
	}
	return "full"
}

// Options configure Open. The zero value gives the defaults.
type Options struct {
	// Durability: DurabilityFull (default) or DurabilityNormal.
	Durability Durability
	// Worker identifies this Store in leases and names its lock file
	// (default: hostname:pid:random). Two open Stores must not share one.
	Worker string
	// WatchInterval is how often the store polls PRAGMA data_version to
	// notice commits by other processes and send on Wake (default 50ms).
	WatchInterval time.Duration
	// BusyTimeout is how long an operation waits for another process's
	// write lock before failing with ErrLocked (default 5s).
	BusyTimeout time.Duration
	// PeerInterval is how often the Store looks for a dead Store on the
	// same file (a lock file no live process holds; see locks.go) to
	// signal Deaths (default 1s; rounded up to a multiple of
	// WatchInterval).
	PeerInterval time.Duration
	// ReadOnly opens the file for inspection: Open never migrates or
	// writes the file and creates no file (no lock directory, no -wal or
	// -shm), and every write method fails with ErrReadOnly. A file that
	// does not exist, is empty (0 bytes) or has no tables yet reads as an
	// empty store and is not created. A file of an older schema fails with
	// ErrSchemaTooOld (a read-write Open migrates it). Wake never receives.
	// How the file is read (mode=ro or immutable=1) is described in
	// docs/sqlite.md; Durability and WatchInterval are ignored.
	ReadOnly bool
	// MustExist opens only a file that exists: Open fails with an error
	// wrapping store.ErrNoSchema if there is no file at the path, instead
	// of creating it (read-write) or reading it as empty (ReadOnly). A
	// read-write Open still migrates an older schema.
	MustExist bool
}

// Store is the SQLite store.Store. It is safe for concurrent use by many
// goroutines and by several processes opening the same file.
type Store struct {
	path     string
	opts     Options
	worker   string
	readOnly bool

	wdb *sql.DB // the write connection's pool, of one
	w   *writer
	rdb *sql.DB // read-only pool; one connection is the watcher's

	qmu        sync.Mutex
	qcond      *sync.Cond
	queue      []*request
	closing    bool
	writerDone chan struct{}
	closed     atomic.Bool
	commits    atomic.Int64 // transactions committed by the writer

	wake      chan struct{}
	deaths    chan struct{} // Deaths (deaths.go)
	watchConn *sql.Conn
	version   int64 // last PRAGMA data_version seen by watchConn
	cancelSeq int64 // last cancel_seq seen by watchConn
	cancels   store.Signals
	watchStop chan struct{}
	watchDone chan struct{}

	lock      *os.File // our lock file, locked for the store's life
	closeOnce sync.Once
	closeErr  error
}

var (
	_ store.Store        = (*Store)(nil)
	_ store.Waker        = (*Store)(nil)
	_ store.DeathWatcher = (*Store)(nil)
	_ store.Identity     = (*Store)(nil)
)

// Hopper's SQLite application_id ("HOPR"), in the file header.
const applicationID = 0x484f5052

// readers is the size of the read-only pool, besides the watcher's connection.
var readers = max(4, runtime.GOMAXPROCS(0))

// Open opens (creating if needed) the store in the SQLite file at path,
// running embedded migrations: a file of an older schema is upgraded in
// place. It fails with an error wrapping ErrNotDatabase, without changing
// the file, if the file is not a Hopper database, and with ErrSchemaTooNew
// if a newer Hopper wrote it. At Open, the leases of jobs claimed by Stores
// whose process has died are expired, so the next Rescue returns those
// jobs at once. With opts.ReadOnly it only reads (see Options.ReadOnly).
//
// OpenURL opens a store named by a "sqlite:" URL, and importing the
// package registers that scheme with store.Open.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlitestore: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", path, err)
	}
	if opts.Durability != DurabilityFull && opts.Durability != DurabilityNormal {
		return nil, fmt.Errorf("sqlitestore: unknown durability %d", opts.Durability)
	}
	if opts.Worker == "" {
		opts.Worker = defaultWorker()
	}
	if opts.WatchInterval <= 0 {
		opts.WatchInterval = 50 * time.Millisecond
	}
	if opts.BusyTimeout <= 0 {
		opts.BusyTimeout = 5 * time.Second
	}
	if opts.PeerInterval <= 0 {
		opts.PeerInterval = DefaultPeerInterval
	}
	s := &Store{
		path:       abs,
		opts:       opts,
		worker:     opts.Worker,
		readOnly:   opts.ReadOnly,
		writerDone: make(chan struct{}),
		wake:       make(chan struct{}, 1),
		deaths:     make(chan struct{}, 1),
		watchStop:  make(chan struct{}),
		watchDone:  make(chan struct{}),
	}
	s.qcond = sync.NewCond(&s.qmu)
	if opts.MustExist {
		if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("sqlitestore: %s: %w: no database file there", abs, store.ErrNoSchema)
		}
	}
	if s.readOnly {
		if err := s.openReadOnly(); err != nil {
			s.release()
			return nil, err
		}
		return s, nil
	}
	if err := s.open(ctx); err != nil {
		s.release()
		return nil, err
	}
	go s.writeLoop()
	go s.watch()
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	createPrivate(s.path)
	var err error
	if s.wdb, err = sql.Open(driverName(), s.dsn(false)); err != nil {
		return s.translate(err)
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return s.translate(err)
	}
	s.w = newWriter(conn)
	if err := s.checkFile(); err != nil {
		return err
	}
	var mode string
	if err := s.w.scanRow("PRAGMA journal_mode = WAL", nil, &mode); err != nil {
		return s.translate(err)
	}
	if mode != "wal" {
		return fmt.Errorf("sqlitestore: %s: cannot use WAL journal mode (got %q); is the file on a network file system?", s.path, mode)
	}
	for _, pragma := range []string{
		// No busy handler: writer.begin waits for the write lock itself.
		"PRAGMA busy_timeout = 0",
		// Truncate the WAL back to 64 MiB after a checkpoint once a big
		// transaction has grown it.
		"PRAGMA journal_size_limit = 67108864",
		// Keep the statement journals of the per-request savepoints in
		// memory rather than in temporary files.
		"PRAGMA temp_store = MEMORY",
	} {
		if _, err := s.w.exec(pragma); err != nil {
			return s.translate(err)
		}
	}
	if err := s.migrate(); err != nil {
		return err
	}
	if s.lock, err = acquireLock(s.lockDir(), s.worker, s.opts.BusyTimeout); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", s.path, err)
	}
	if s.rdb, err = sql.Open(driverName(), s.dsn(true)); err != nil {
		return s.translate(err)
	}
	s.rdb.SetMaxOpenConns(readers + 1)
	s.rdb.SetMaxIdleConns(readers + 1)
	if s.watchConn, err = s.rdb.Conn(ctx); err != nil {
		return s.translate(err)
	}
	// Jobs claimed by dead Stores, and by an earlier Store with our worker
	// ID, are up for rescue now.
	stale := findStale(s.lockDir(), s.worker)
	err = s.txn(func(w *writer) error {
		return expireWorkers(w, append(workersOf(stale), s.worker))
	})
	releaseStale(stale, err == nil)
	if err != nil {
		return s.translate(err)
	}
	// Changes from here on signal Wake.
	s.version, err = s.dataVersion()
	if err == nil {
		s.cancelSeq, _ = s.readCancelSeq() // a failure: the next read signals once
	}
	return s.translate(err)
}

// txn runs fn in a transaction of its own on the writer, before the writer
// goroutine starts.
func (s *Store) txn(fn func(w *writer) error) error {
	w := s.w
	if err := w.begin(s.opts.BusyTimeout); err != nil {
		return err
	}
	w.resetCounts()
	err := fn(w)
	if err == nil {
		w.endRequest(true)
		err = w.flushCounts()
	}
	if err == nil {
		_, err = w.exec("COMMIT")
	}
	if err != nil {
		w.rollback()
	}
	return err
}

// dsn is the driver's connection string: a SQLite URI with the pragmas
// every connection needs.
func (s *Store) dsn(readOnly bool) string {
	u := url.URL{Path: s.path}
	q := "_busy_timeout=" + strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10) + "&_foreign_keys=1"
	if readOnly {
		q += "&_query_only=1"
	} else {
		q += "&_synchronous=" + map[Durability]string{DurabilityFull: "FULL", DurabilityNormal: "NORMAL"}[s.opts.Durability]
	}
	return "file:" + u.EscapedPath() + "?" + q
}

// createPrivate creates the database file at path, empty and readable
// and writable by its owner only, if there is none. SQLite would create it
// with mode 0644 (less the umask), and it gives the file's -wal and -shm
// the file's mode: every local user could read the jobs' args and
// results, which may hold secrets. An existing file keeps its mode (chmod
// 640 one that a group may read, as read-only stores of other users do).
// Any error is left for SQLite to report as it opens the file.
func createPrivate(path string) {
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}
}

func defaultWorker() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [4]byte
	rand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

// WorkerID returns the ID this Store records on the jobs it claims and
// names its lock file after (Options.Worker or the generated default). The
// runtime passes it as ClaimParams.Worker.
func (s *Store) WorkerID() string { return s.worker }

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Wake implements store.Waker: the channel receives (buffered, at most one
// pending signal) within about Options.WatchInterval of a commit by another
// connection to the file — another process, or another Store in this one.
// This Store's own commits may signal it too. It is never closed; on a
// read-only Store it never receives.
func (s *Store) Wake() <-chan struct{} { return s.wake }

func (s *Store) translate(err error) error { return translate(s.path, err) }

// Close waits for queued writes, expires the leases of jobs this Store
// still has running (nobody can finish them through it any more, so others
// may rescue them at once), stops the watcher and releases the files.
// Operations after Close return job.ErrClosed.
func (s *Store) Close() error {
	if s.readOnly {
		s.closeOnce.Do(func() {
			s.qmu.Lock()
			s.closing = true
			s.closed.Store(true)
			s.qmu.Unlock()
			s.closeErr = s.release()
		})
		return s.closeErr
	}
	s.closeOnce.Do(func() {
		final := &request{ctx: bg, done: make(chan struct{}), fn: func(w *writer) error {
			_, err := w.exec(sqlExpireWorker, s.worker)
			return err
		}}
		s.qmu.Lock()
		s.closing = true
		s.closed.Store(true)
		s.queue = append(s.queue, final)
		s.qcond.Signal()
		s.qmu.Unlock()
		<-final.done
		<-s.writerDone
		close(s.watchStop)
		<-s.watchDone
		s.closeErr = s.release()
		if final.err != nil && s.closeErr == nil {
			s.closeErr = final.err
		}
	})
	return s.closeErr
}

// release closes whatever open managed to open.
func (s *Store) release() error {
	var errs []error
	if s.watchConn != nil {
		s.watchConn.Close()
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.w != nil {
		s.w.close()
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	if s.lock != nil {
		errs = append(errs, removeLocked(s.lock))
	}
	return s.translate(errors.Join(errs...))
}

// watch polls PRAGMA data_version, which changes when another connection
// commits, and signals Wake.
func (s *Store) watch() {
	defer close(s.watchDone)
	t := time.NewTicker(s.opts.WatchInterval)
	defer t.Stop()
	peerEvery := max(1, int((s.opts.PeerInterval+s.opts.WatchInterval-1)/s.opts.WatchInterval))
	for tick := 1; ; tick++ {
		select {
		case <-s.watchStop:
			return
		case <-t.C:
		}
		if tick%peerEvery == 0 {
			s.checkPeers()
		}
		v, err := s.dataVersion()
		if err != nil || v == s.version {
			continue
		}
		s.version = v
		select {
		case s.wake <- struct{}{}:
		default:
		}
		if seq, err := s.readCancelSeq(); err == nil && seq != s.cancelSeq {
			s.cancelSeq = seq
			s.cancels.Signal()
		}
	}
}

// readCancelSeq reads cancel_seq, the count of cancels of running jobs.
func (s *Store) readCancelSeq() (int64, error) {
	var v int64
	err := s.watchConn.QueryRowContext(bg, "SELECT seq FROM cancel_seq WHERE id = 1").Scan(&v)
	return v, err
}

// WatchCancels implements store.CancelWatcher: a cancel of a running job
// by this Store signals at once; one by another process, when the watch
// (every Options.WatchInterval) sees cancel_seq change.
func (s *Store) WatchCancels() (<-chan struct{}, func()) { return s.cancels.Watch() }

// cancelled tells every Store on the file that a running job's cancel
// was requested: cancel_seq+1, in a transaction of its own after the
// cancel's (a process that dies between the two leaves the cancel to the
// job's next lease renewal), and this Store's watchers at once.
func (s *Store) cancelled(ctx context.Context) {
	s.cancels.Signal()
	s.write(ctx, func(w *writer) error { //nolint:errcheck // the lease renewal covers a lost signal
		_, err := w.exec(`UPDATE cancel_seq SET seq = seq + 1 WHERE id = 1`)
		return err
	})
}

func (s *Store) dataVersion() (int64, error) {
	var v int64
	err := s.watchConn.QueryRowContext(bg, "PRAGMA data_version").Scan(&v)
	return v, err
}

// writable returns the error of a write method called on a closed or
// read-only Store.
func (s *Store) writable() error {
	if s.closed.Load() {
		return job.ErrClosed
	}
	if s.readOnly {
		return fmt.Errorf("sqlitestore: %s: %w: the store was opened with Options.ReadOnly", s.path, ErrReadOnly)
	}
	return nil
}

// errIfClosed is for read methods.
func (s *Store) errIfClosed() error {
	if s.closed.Load() {
		return job.ErrClosed
	}
	return nil
}
