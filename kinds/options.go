package kinds

// Options say which built-in kinds a program offers and what their jobs may
// reach: the operator's policy, applied at enqueue (so a mistake or an
// attempt outside the policy is refused at once) and again when a job runs
// (a job stored before the policy changed fails permanently, saying why).
// The zero value offers both kinds with the default policies, which are
// the safe ones: see ExecPolicy and HTTPPolicy.
type Options struct {
	// Kinds lists the kinds to register, of KindExec and KindHTTP (nil:
	// both).
	Kinds []string
	// Exec is the policy of exec jobs.
	Exec ExecPolicy
	// HTTP is the policy of http jobs.
	HTTP HTTPPolicy
}

// ExecPolicy is what exec jobs may run, as whom, and with which
// environment.
type ExecPolicy struct{}

// HTTPPolicy is where http jobs may connect.
type HTTPPolicy struct{}
