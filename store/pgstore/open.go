package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of Options.
const (
	DefaultSchema       = "hopper"
	DefaultPoolSize     = 10
	DefaultPollInterval = time.Second
	DefaultClockRefresh = 30 * time.Second
)

// Options configure Open. The zero value gives the defaults.
type Options struct {
	// Schema is the PostgreSQL schema of Hopper's tables (default
	// "hopper"), so that Hopper can share the application's database.
	// Every statement names it; nothing depends on search_path. Letters,
	// digits and underscores, not starting with a digit, at most 50 bytes.
	Schema string
	// PoolSize is the number of pooled connections (default 10, or the
	// connection string's pool_max_conns). A read-write Store also holds
	// one more connection for LISTEN, unless PgBouncer is set.
	PoolSize int
	// Worker names this process in leases (store.Identity; default
	// hostname:pid:random).
	Worker string
	// ReadOnly opens for inspection: nothing is migrated or created, every
	// write fails with ErrReadOnly, Wake never receives, and a database
	// without Hopper's schema reads as empty. A schema of another version
	// fails with ErrSchemaTooOld or ErrSchemaTooNew.
	ReadOnly bool
	// MustExist opens only a schema that exists: Open fails with
	// ErrNoSchema instead of creating it (read-write) or reading it as
	// empty (ReadOnly), so that a misspelt schema is an error. A
	// read-write Open still migrates an older schema.
	MustExist bool
	// NoMigrate skips the migration a read-write Open otherwise applies;
	// Open then fails unless the schema is this build's version (run
	// Migrate, e.g. `hopper migrate`, first).
	NoMigrate bool
	// PgBouncer makes the Store work behind PgBouncer in transaction
	// pooling mode: statements are sent without named prepared statements
	// (pgx's QueryExecModeExec), nothing uses session state, and there is
	// no LISTEN connection: Wake fires every PollInterval.
	PgBouncer bool
	// PollInterval is how often Wake fires without a notification: the
	// fallback for missed or disabled notifications (default 1s).
	PollInterval time.Duration
	// NoVacuum stops the Store from vacuuming the jobs table itself when
	// autovacuum is off for it (see vacuum.go; it never does when
	// autovacuum is on, nor with PgBouncer).
	NoVacuum bool
	// ClockRefresh is how often Now re-measures the server's clock
	// (default 30s).
	ClockRefresh time.Duration
	// LocalClock is this host's clock, which Now corrects to the server's
	// (default time.Now). Tests set a skewed one.
	LocalClock func() time.Time
}

// Store is the PostgreSQL store.Store. It is safe for concurrent use by many
// goroutines and by any number of processes sharing the database. It also
// implements store.Waker (LISTEN/NOTIFY), store.Clock (the server's time),
// store.Leader, store.Identity and store.TxEnqueuer (for a pgx.Tx).
type Store struct {
	opts     Options
	schema   string // unquoted
	channel  string // NOTIFY channel
	self     string // the tag of this Store's own notifications (listen.go)
	worker   string
	readOnly bool
	// empty: a read-only Store of a database without Hopper's schema.
	empty bool

	pool       *pgxpool.Pool
	listenConf *pgx.ConnConfig
	queries    sync.Map // SQL template → SQL for this schema

	closed    atomic.Bool
	closeOnce sync.Once
	stop      context.CancelFunc // cancels run
	run       context.Context    // the background goroutines' context
	wg        sync.WaitGroup

	wake      chan struct{}
	cancels   store.Signals // WatchCancels
	notifyReq chan struct{} // notify → notifier, buffered (1)
	pending   struct {      // what the notifier's next notification says
		sync.Mutex
		reset bool                // reset the floors (keys unknown)
		keys  map[string]floorKey // else lower them to these
	}
	floors    *floors       // nil behind PgBouncer and when read-only (floor.go)
	keyless   *keylessHints // keyless.go
	guesses   keyedGuesses  // keyahead.go
	fast      keyedFast     // keyfast.go
	probeReq  chan []string // Claim → prober: the queues to probe (nil: all), buffered (1)
	listening atomic.Bool
	listenUp  chan struct{} // closed once LISTEN first succeeded
	upOnce    sync.Once

	clock *serverClock
	w     *groupWriter
	ident atomic.Pointer[dbIdentity] // the database's, for EnqueueTx (database.go)

	insertStmts   atomic.Int64           // INSERT statements sent (tests count them)
	notifications atomic.Int64           // notifications sent by the notifier
	echoes        atomic.Int64           // own notifications the listener passed over
	heard         atomic.Int64           // notifications of others the listener woke Wake for
	keylessReads  atomic.Int64           // keyless reads of keyed claims (sqlKeylessJobs; tests count them)
	aheadClaims   atomic.Int64           // keyed claims that went on from a guess (keyahead.go; tests count them)
	fastClaims    atomic.Int64           // keyed claims made in one round trip (keyfast.go; tests count them)
	fastMisses    atomic.Int64           // keyed claims that tried one round trip and walked (tests count them)
	onHeard       atomic.Pointer[func()] // tests: called after the listener handled a notification
	onNotify      atomic.Pointer[func()] // tests: called after each notification
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Waker      = (*Store)(nil)
	_ store.Clock      = (*Store)(nil)
	_ store.Leader     = (*Store)(nil)
	_ store.Identity   = (*Store)(nil)
	_ store.TxEnqueuer = (*Store)(nil)
	_ store.Pinger     = (*Store)(nil)
)

// Open connects to the database connString names (a pgx connection string:
// URL or key=value; OpenURL and store.Open take a store URL with Hopper's
// parameters). Unless opts.ReadOnly or opts.NoMigrate, it applies the
// embedded migrations (see Migrate). It fails fast, with an error wrapping
// ErrUnavailable or ErrTooManyConnections, when the server cannot be
// reached or refuses the connection, and with ErrSchemaTooNew on a schema a
// newer Hopper wrote.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if err := checkSchemaName(opts.Schema); err != nil {
		return nil, fmt.Errorf("pgstore: schema: %w", err)
	}
	if opts.Worker == "" {
		opts.Worker = defaultWorker()
	}
	opts.PollInterval = cmpOr(opts.PollInterval, DefaultPollInterval)
	opts.ClockRefresh = cmpOr(opts.ClockRefresh, DefaultClockRefresh)
	if opts.LocalClock == nil {
		opts.LocalClock = time.Now
	}
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgstore: connection string: %w", err)
	}
	switch {
	case opts.PoolSize > 0:
		cfg.MaxConns = int32(opts.PoolSize)
	case !strings.Contains(connString, "pool_max_conns"):
		cfg.MaxConns = DefaultPoolSize
	}
	opts.PoolSize = int(cfg.MaxConns)
	cc := cfg.ConnConfig
	if _, ok := cc.RuntimeParams["application_name"]; !ok && !opts.PgBouncer {
		cc.RuntimeParams["application_name"] = "hopper"
	}
	if opts.PgBouncer {
		// No named prepared statements and no describe round trips: each
		// statement is one unnamed Parse/Bind/Execute, which PgBouncer's
		// transaction mode can route.
		cc.DefaultQueryExecMode = pgx.QueryExecModeExec
		cc.StatementCacheCapacity = 0
		cc.DescriptionCacheCapacity = 0
	}
	if opts.ReadOnly && !opts.PgBouncer {
		// Belt and braces: the server refuses writes too.
		cc.RuntimeParams["default_transaction_read_only"] = "on"
	}
	run, stop := context.WithCancel(context.Background())
	s := &Store{
		opts:       opts,
		schema:     opts.Schema,
		channel:    channelName(opts.Schema),
		self:       newSelfTag(),
		worker:     opts.Worker,
		readOnly:   opts.ReadOnly,
		listenConf: cc.Copy(),
		run:        run,
		stop:       stop,
		wake:       make(chan struct{}, 1),
		notifyReq:  make(chan struct{}, 1),
		listenUp:   make(chan struct{}),
		keyless:    newKeylessHints(),
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		stop()
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := s.open(ctx); err != nil {
		s.pool.Close()
		stop()
		return nil, err
	}
	s.start()
	return s, nil
}

// open checks the connection and the schema, migrating it if allowed, and
// measures the server's clock.
func (s *Store) open(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return s.translate(err)
	}
	defer conn.Release()
	migrating := !s.readOnly && !s.opts.NoMigrate
	if !migrating || s.opts.MustExist {
		v, err := schemaVersionOf(ctx, conn.Conn(), s.schema)
		if err != nil {
			return s.translate(err)
		}
		switch {
		case v > SchemaVersion():
			return fmt.Errorf("pgstore: schema %q: %w (it has version %d, this Hopper knows up to %d)", s.schema, ErrSchemaTooNew, v, SchemaVersion())
		case v == 0 && s.opts.MustExist:
			return fmt.Errorf("pgstore: schema %q: %w: it does not exist in database %q, or has no Hopper tables", s.schema, ErrNoSchema, conn.Conn().Config().Database)
		case v == 0 && s.readOnly:
			s.empty = true
		case v == 0:
			return fmt.Errorf("pgstore: schema %q: %w; run `hopper migrate` (or open without hopper_migrate=false) to create it", s.schema, ErrNoSchema)
		case v < SchemaVersion() && !migrating:
			return fmt.Errorf("pgstore: schema %q: %w (it has version %d, this Hopper uses %d); %s never migrates: "+
				"run `hopper migrate` (or `hopper serve`) once to upgrade it", s.schema, ErrSchemaTooOld, v, SchemaVersion(),
				map[bool]string{true: "a read-only open", false: "an open with hopper_migrate=false"}[s.readOnly])
		}
	}
	if migrating {
		if _, err := migrate(ctx, conn.Conn(), s.schema); err != nil {
			return err
		}
	}
	if !s.readOnly {
		id, err := readIdentity(ctx, conn.Conn())
		if err != nil {
			return s.translate(err)
		}
		s.ident.Store(&id)
	}
	s.clock = newServerClock(s.opts.LocalClock)
	if err := s.clock.measure(ctx, conn.Conn(), 5); err != nil {
		return s.translate(err)
	}
	return nil
}

// start starts the background goroutines: the enqueue writer, the
// listener, the poller and the clock refresher.
func (s *Store) start() {
	s.wg.Add(1)
	go s.refreshClock()
	if s.readOnly {
		return
	}
	if !s.opts.PgBouncer {
		s.floors = newFloors(s.opts.PollInterval)
		s.probeReq = make(chan []string, 1)
		s.wg.Add(1)
		go s.prober()
	}
	s.w = newGroupWriter(s)
	s.w.start()
	s.wg.Add(2)
	go s.poll()
	go s.notifier()
	if !s.opts.PgBouncer {
		s.wg.Add(1)
		go s.listen()
		if !s.opts.NoVacuum {
			s.wg.Add(1)
			go s.vacuumer()
		}
	}
}

// Close stops the background goroutines (an Enqueue already handed to the
// group writer completes first) and closes the connections. Operations
// after Close return job.ErrClosed. Running jobs keep their leases: another
// process rescues them once they expire.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.w != nil {
			s.w.close()
		}
		s.stop() // the notifier sends what is pending, then returns
		s.wg.Wait()
		s.pool.Close()
	})
	return nil
}

// WorkerID implements store.Identity: the ID this Store names its process by
// (Options.Worker or the generated default). A client on this store uses it
// as its ClaimParams.Worker and its leader-election holder.
func (s *Store) WorkerID() string { return s.worker }

// Schema returns the PostgreSQL schema of the Store's tables.
func (s *Store) Schema() string { return s.schema }

// Pool returns the Store's connection pool, e.g. to begin the transactions
// given to EnqueueTx. Closing the Store closes it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// q returns the SQL of template for this Store's schema: every "{schema}"
// becomes the quoted schema name.
func (s *Store) q(template string) string {
	if v, ok := s.queries.Load(template); ok {
		return v.(string)
	}
	v := strings.ReplaceAll(template, "{schema}", quoteIdent(s.schema))
	s.queries.Store(template, v)
	return v
}

// writable returns the error of a write method called on a closed or
// read-only Store.
func (s *Store) writable() error {
	if s.closed.Load() {
		return job.ErrClosed
	}
	if s.readOnly {
		return fmt.Errorf("pgstore: schema %q: %w: the store was opened with Options.ReadOnly", s.schema, ErrReadOnly)
	}
	return nil
}

// readable returns the error of a read method called on a closed Store.
func (s *Store) readable() error {
	if s.closed.Load() {
		return job.ErrClosed
	}
	return nil
}

// maxSchemaName leaves room in the 63 bytes of a PostgreSQL name for the
// NOTIFY channel's prefix.
const maxSchemaName = 50

func checkSchemaName(name string) error {
	switch {
	case name == "":
		return errors.New("must not be empty")
	case len(name) > maxSchemaName:
		return fmt.Errorf("%q is longer than %d bytes", name, maxSchemaName)
	case strings.HasPrefix(strings.ToLower(name), "pg_"):
		return fmt.Errorf("%q: names starting with pg_ are reserved by PostgreSQL", name)
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("%q: use letters, digits and underscores, not starting with a digit", name)
		}
	}
	return nil
}

func quoteIdent(name string) string { return pgx.Identifier{name}.Sanitize() }

// channelName is the NOTIFY channel of a schema's jobs: NOTIFY is
// database-wide, so each schema has its own (at most 62 bytes, see
// maxSchemaName).
func channelName(schema string) string { return "hopper_jobs_" + schema }

func defaultWorker() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var b [4]byte
	rand.Read(b[:])
	return host + ":" + strconv.Itoa(os.Getpid()) + ":" + hex.EncodeToString(b[:])
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
