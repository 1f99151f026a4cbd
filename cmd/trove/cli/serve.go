package cli

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/atomicfile"
	"github.com/trovehq/trove/internal/certfile"
	"github.com/trovehq/trove/storage/postgres"
)

// envOr returns the environment variable name, or def when it is unset.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveConfig is what the serve flags (and their environment variables)
// configure.
type serveConfig struct {
	data, addr, dbURL          string
	shutdownTimeout, authCache time.Duration
	timeouts                   httpapi.Timeouts // every field positive (checkTimeouts)
	limits                     trove.Limits     // every field set and valid (resolveLimits)
	db                         dbOptions        // resolved by resolveDBOptions
	dreams                     dreamConfig
	sessionLoop                sessionLoopConfig
	webhooks                   webhookConfig
	console                    bool   // serve the web console under /console/
	consoleSecureCookie        bool   // console cookie Secure on plain HTTP (behind a TLS proxy)
	tlsCert, tlsKey            string // serve HTTPS with this pair (both or neither)
}

// The PostgreSQL pool flags and their environment variables.
const (
	dbMaxConnsFlag, dbMaxConnsEnv             = "db-max-conns", "TROVE_DB_MAX_CONNS"
	dbConnectTimeoutFlag, dbConnectTimeoutEnv = "db-connect-timeout", "TROVE_DB_CONNECT_TIMEOUT"
)

// dbTimeFlag is a serve flag setting one PostgreSQL time bound of
// dbOptions, with an environment variable used when the flag is not given.
// 0 leaves the setting to the URL (when it has one) or the driver's
// default, named in zero.
type dbTimeFlag struct {
	name, env, help, zero string
	field                 func(*dbOptions) *time.Duration
}

// dbTimeFlags are serve's PostgreSQL time bounds (docs/API.md, "Deadlines").
var dbTimeFlags = []dbTimeFlag{
	{dbConnectTimeoutFlag, dbConnectTimeoutEnv, "bound on connecting to PostgreSQL and on waiting for a pooled connection, past which a request fails with a retryable 503",
		"the URL's connect_timeout or " + postgres.DefaultConnectTimeout.String(), func(o *dbOptions) *time.Duration { return &o.connectTimeout }},
	{"db-statement-timeout", "TROVE_DB_STATEMENT_TIMEOUT", "server-side statement_timeout of every connection: a statement running longer is cancelled and its request answered with a retryable 503",
		"the URL's statement_timeout or " + postgres.DefaultStatementTimeout.String(), func(o *dbOptions) *time.Duration { return &o.statementTimeout }},
	{"db-lock-timeout", "TROVE_DB_LOCK_TIMEOUT", "server-side lock_timeout of every connection: a write waiting longer for a store's lock (held by another writer) is answered with a retryable 503",
		"the URL's lock_timeout or " + postgres.DefaultLockTimeout.String(), func(o *dbOptions) *time.Duration { return &o.lockTimeout }},
	{"db-idle-in-transaction-timeout", "TROVE_DB_IDLE_IN_TRANSACTION_TIMEOUT", "server-side idle_in_transaction_session_timeout: the server ends a transaction whose node went silent this long, releasing its locks; a commit whose acknowledgement is lost is answered (503) only after it",
		postgres.DefaultIdleInTxTimeout.String(), func(o *dbOptions) *time.Duration { return &o.idleInTxTimeout }},
	{"db-tcp-timeout", "TROVE_DB_TCP_TIMEOUT", "a PostgreSQL connection whose peer went silent (no reset) is dropped after about this long, on both ends: TCP keepalives from half of it, TCP_USER_TIMEOUT (Linux) and the server's tcp_user_timeout",
		postgres.DefaultTCPTimeout.String(), func(o *dbOptions) *time.Duration { return &o.tcpTimeout }},
}

// resolveDBOptions applies the pool environment variables to the flags not
// given and checks the result: none may be negative, and 0 leaves the
// setting to the URL or the driver's default. The error names the flag or
// variable at fault. raw holds the time flags' values.
func resolveDBOptions(changed func(flag string) bool, maxConns int, raw dbOptions) (dbOptions, error) {
	src := "--" + dbMaxConnsFlag
	if ev := strings.TrimSpace(os.Getenv(dbMaxConnsEnv)); ev != "" && !changed(dbMaxConnsFlag) {
		n, err := strconv.Atoi(ev)
		if err != nil {
			return dbOptions{}, fmt.Errorf("%s must be a non-negative integer (0: the URL's pool_max_conns or %d), got %q", dbMaxConnsEnv, postgres.DefaultMaxConns, ev)
		}
		maxConns, src = n, dbMaxConnsEnv
	}
	if maxConns < 0 || maxConns > math.MaxInt32 {
		return dbOptions{}, fmt.Errorf("%s must be a non-negative integer (0: the URL's pool_max_conns or %d), got %d", src, postgres.DefaultMaxConns, maxConns)
	}
	o := raw
	o.maxConns = int32(maxConns)
	for _, f := range dbTimeFlags {
		v := f.field(&o)
		tsrc := "--" + f.name
		if ev := strings.TrimSpace(os.Getenv(f.env)); ev != "" && !changed(f.name) {
			d, err := time.ParseDuration(ev)
			if err != nil {
				return dbOptions{}, fmt.Errorf("%s must be a non-negative duration such as 5s (0: %s), got %q", f.env, f.zero, ev)
			}
			*v, tsrc = d, f.env
		}
		if *v < 0 {
			return dbOptions{}, fmt.Errorf("%s must be a non-negative duration such as 5s (0: %s), got %s", tsrc, f.zero, *v)
		}
	}
	return o, nil
}

// limitFlag is a serve flag setting one integer field of trove.Limits, with
// an environment variable used when the flag is not given.
type limitFlag struct {
	name, env, help string
	field           func(*trove.Limits) *int
	max             int // 0: no upper bound
}

// maxContentBytesCap bounds --max-content-bytes: far above the API's
// default, far below what the databases hold in one value.
const maxContentBytesCap = 64 << 20

// limitFlags are the limits serve exposes. The path and page-size limits are
// not among them: clients (trove tool, sync, mounts) assume the documented
// values, so changing them on one server would break those clients.
var limitFlags = []limitFlag{
	{"max-memories", "TROVE_MAX_MEMORIES_PER_STORE", "live memories in one store: at the limit creating a new path is a 400, existing memories stay editable",
		func(l *trove.Limits) *int { return &l.MaxMemoriesPerStore }, 0},
	{"max-content-bytes", "TROVE_MAX_CONTENT_BYTES", "memory content size in bytes (request bodies are allowed six times this, for JSON escapes)",
		func(l *trove.Limits) *int { return &l.MaxContentBytes }, maxContentBytesCap},
	{"max-name-chars", "TROVE_MAX_NAME_CHARS", "store name length in characters",
		func(l *trove.Limits) *int { return &l.MaxNameChars }, 0},
	{"max-description-chars", "TROVE_MAX_DESCRIPTION_CHARS", "store description length in characters",
		func(l *trove.Limits) *int { return &l.MaxDescriptionChars }, 0},
	{"max-metadata-pairs", "TROVE_MAX_METADATA_PAIRS", "metadata key-value pairs on one store",
		func(l *trove.Limits) *int { return &l.MaxMetadataPairs }, 0},
	{"max-metadata-key-chars", "TROVE_MAX_METADATA_KEY_CHARS", "metadata key length in characters",
		func(l *trove.Limits) *int { return &l.MaxMetadataKeyChars }, 0},
	{"max-metadata-value-chars", "TROVE_MAX_METADATA_VALUE_CHARS", "metadata value length in characters",
		func(l *trove.Limits) *int { return &l.MaxMetadataValChars }, 0},
	{"max-stores-per-session", "TROVE_MAX_STORES_PER_SESSION", "memory stores attached to one session",
		func(l *trove.Limits) *int { return &l.MaxStoresPerSession }, 0},
	{"max-instructions-chars", "TROVE_MAX_INSTRUCTIONS_CHARS", "instructions of one attached store, characters",
		func(l *trove.Limits) *int { return &l.MaxInstructionsChars }, 0},
	{"max-stores-per-workspace", "TROVE_MAX_STORES_PER_WORKSPACE", "memory stores in one workspace, archived ones included: at the limit creating or forking a store is a 400",
		func(l *trove.Limits) *int { return &l.MaxStoresPerWorkspace }, 0},
	{"max-store-bytes", "TROVE_MAX_STORE_BYTES", "sum of the content bytes of one store's live memories: a create or update that would pass it is a 400, shrinking is always allowed",
		func(l *trove.Limits) *int { return &l.MaxStoreBytes }, 0},
	{"max-versions-per-store", "TROVE_MAX_VERSIONS_PER_STORE", "retained versions of one store: at the limit creates, updates and renames are a 400 (deletes still work) until retention deletes old versions",
		func(l *trove.Limits) *int { return &l.MaxVersionsPerStore }, 0},
}

// retentionFlag and retentionEnv set Limits.VersionRetention.
const retentionFlag, retentionEnv = "version-retention", "TROVE_VERSION_RETENTION"

// resolveLimits returns the limits serve runs with: each one is its flag
// when given, else its environment variable when set, else the documented
// default (trove.DefaultLimits, already in l). Every limit must be positive
// (and --max-content-bytes at most maxContentBytesCap); the error names the
// flag or variable at fault.
func resolveLimits(changed func(flag string) bool, l trove.Limits) (trove.Limits, error) {
	for _, lf := range limitFlags {
		v := lf.field(&l)
		src := "--" + lf.name
		if !changed(lf.name) {
			if ev, ok := os.LookupEnv(lf.env); ok && ev != "" {
				n, err := strconv.Atoi(strings.TrimSpace(ev))
				if err != nil {
					return l, fmt.Errorf("%s must be a positive integer, got %q", lf.env, ev)
				}
				*v, src = n, lf.env
			}
		}
		if *v <= 0 {
			return l, fmt.Errorf("%s must be a positive integer, got %d", src, *v)
		}
		if lf.max > 0 && *v > lf.max {
			return l, fmt.Errorf("%s must be at most %d, got %d", src, lf.max, *v)
		}
	}
	src := "--" + retentionFlag
	if !changed(retentionFlag) {
		if ev, ok := os.LookupEnv(retentionEnv); ok && ev != "" {
			d, err := time.ParseDuration(strings.TrimSpace(ev))
			if err != nil {
				return l, fmt.Errorf("%s must be a positive duration such as 720h, got %q", retentionEnv, ev)
			}
			l.VersionRetention, src = d, retentionEnv
		}
	}
	if l.VersionRetention <= 0 {
		return l, fmt.Errorf("%s must be a positive duration such as 720h, got %s", src, l.VersionRetention)
	}
	return l, nil
}

// maxBodyFor returns the request body bound for content of up to
// maxContent bytes: every byte may take six as a JSON \u escape, plus room
// for the rest of the body; never below httpapi.DefaultMaxBodyBytes.
func maxBodyFor(maxContent int) int64 {
	return max(httpapi.DefaultMaxBodyBytes, 6*int64(maxContent)+64<<10)
}

func newServeCmd(e *env) *cobra.Command {
	var c serveConfig
	var dbMaxConns int
	var dbTimes dbOptions
	c.limits = trove.DefaultLimits()
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the memory stores API (wire compatible with the Anthropic SDKs)",
		Long:  serveLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.resolve(cmd.Flags().Changed, dbMaxConns, dbTimes); err != nil {
				return err
			}
			return runServe(e, c)
		},
	}
	addServeFlags(cmd.Flags(), &c, &dbMaxConns, &dbTimes)
	return cmd
}

// serveLong is serve's help text.
var serveLong = `Serve the memory stores API over HTTP. Point an official Anthropic SDK at it
by changing its base URL. The first serve on an empty database creates an API
key in workspace ` + defaultWorkspace + `, prints it once and saves it to <data>/api_key.

Data lives in SQLite at <data>/trove.db unless --database names a PostgreSQL URL.

Credentials: a verified API key or session token is remembered for
--auth-cache (default ` + defaultAuthCache.String() + `), so a hot client costs no database read per
request for it. A key revoked or a session ended through this server is
refused at once. A key revoked by another process (trove keys revoke, or
another trove serve on the same PostgreSQL) is refused by this server at most
--auth-cache later. --auth-cache 0 checks the database on every request.

Limits: the --max-* flags and --version-retention default to the API's
documented values; each falls back to its environment variable (named in its
help) when not given, and must be positive. Several nodes on one database
must run with the same limits. Versions older than --version-retention are
deleted hourly, except the current version of each live memory.

Timeouts: a client gets --read-header-timeout to send a request's line and
headers (else the connection is closed), --body-timeout to send its body
once the headers are in (else 408), --write-timeout to read each response
from its first byte (else the connection is closed, so a client that stops
reading holds at most one response), and a keep-alive connection waits
--idle-timeout for its next request. A request's work is cancelled when its
client disconnects. HTTP/1.1 and unencrypted HTTP/2 (prior knowledge) are
served on the same port.

Dreams (/v1/dreams, docs/dreams.md): this server runs queued dreams with the
Messages API key of --anthropic-api-key or ANTHROPIC_API_KEY (and
--anthropic-base-url or ANTHROPIC_BASE_URL for a gateway). Without a key it
logs a warning at start and every dream fails with model_not_configured; give
--dream-workers 0 to a node without a key when other nodes have one. A dream
held by a node that dies is failed (runner_lost) once its --dream-lease ends.

Console: the web console is served on the same port under /console/ (/
redirects there); sign in with an API key. --console=false turns it off.
Behind a proxy that terminates TLS, add --console-secure-cookie so that the
browser never sends the console's session cookie over plain HTTP.

HTTPS: --tls-cert and --tls-key serve HTTPS (HTTP/1.1 and HTTP/2) instead of
plain HTTP; a replaced certificate or key is picked up at the next TLS
handshake, no restart needed. Binding an address that is not loopback
without them prints a warning.

PostgreSQL pool: --db-max-conns and --db-connect-timeout (or their
environment variables) win over the URL's pool_max_conns and connect_timeout,
which win over the defaults (` + strconv.Itoa(postgres.DefaultMaxConns) + ` connections, ` + postgres.DefaultConnectTimeout.String() + `).

Deadlines: every request's work has --request-timeout (from when its body is
in), which reaches the database: a query on a connection gone silent is
abandoned, the connection discarded, and the answer a retryable 503. Every
PostgreSQL connection also carries server-side guards: --db-statement-timeout,
--db-lock-timeout (a write waiting for a store's lock), and
--db-idle-in-transaction-timeout (the server ends a transaction whose node
went silent, releasing its locks), plus --db-tcp-timeout (keepalives and TCP
user timeout on both ends). A write answered with an error never commits
afterwards; a 503 after a lost commit acknowledgement means the write may or
may not have been applied: read it back (docs/API.md, "Deadlines").`

// resolve completes c from the flags (changed reports a flag given on the
// command line) and their environment variables, and checks it:
// limits, timeouts, the PostgreSQL pool and deadlines, dreams and the
// session loop.
func (c *serveConfig) resolve(changed func(flag string) bool, dbMaxConns int, dbTimes dbOptions) error {
	l, err := resolveLimits(changed, c.limits)
	if err != nil {
		return err
	}
	c.limits = l
	if c.timeouts.Request, err = resolveRequestTimeout(changed, c.timeouts.Request); err != nil {
		return err
	}
	if err := checkTimeouts(c.timeouts); err != nil {
		return err
	}
	if c.db, err = resolveDBOptions(changed, dbMaxConns, dbTimes); err != nil {
		return err
	}
	// Background jobs' database calls get the requests' bound.
	c.db.opTimeout = c.timeouts.Request
	if idle := cmp.Or(c.db.idleInTxTimeout, postgres.DefaultIdleInTxTimeout); isPostgresURL(c.dbURL) && idle+time.Second >= c.timeouts.Request {
		return fmt.Errorf("--request-timeout (%s) must be more than --db-idle-in-transaction-timeout (%s) plus 1s: a write commits only with that much time left before its deadline", c.timeouts.Request, idle)
	}
	if err := c.dreams.check(); err != nil {
		return err
	}
	return c.sessionLoop.check()
}

// addServeFlags defines serve's flags on f, into c and, for the PostgreSQL
// pool (resolved by resolve), dbMaxConns and dbTimes.
func addServeFlags(f *pflag.FlagSet, c *serveConfig, dbMaxConns *int, dbTimes *dbOptions) {
	f.StringVar(&c.data, "data", defaultDataDir(), "data directory (env TROVE_DATA)")
	f.StringVar(&c.addr, "addr", envOr("TROVE_ADDR", "127.0.0.1:7007"), "listen address host:port (env TROVE_ADDR)")
	f.StringVar(&c.dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL; empty for SQLite in --data (env TROVE_DATABASE)")
	f.IntVar(dbMaxConns, dbMaxConnsFlag, 0, "PostgreSQL connection pool size; 0: the URL's pool_max_conns, else "+strconv.Itoa(postgres.DefaultMaxConns)+" (env "+dbMaxConnsEnv+")")
	for _, tf := range dbTimeFlags {
		f.DurationVar(tf.field(dbTimes), tf.name, 0, tf.help+"; 0: "+tf.zero+" (env "+tf.env+")")
	}
	f.DurationVar(&c.authCache, "auth-cache", defaultAuthCache, "remember a verified credential this long: one revoked by another process (trove keys revoke) keeps working here up to this long, one revoked through this server stops at once; 0 checks every request")
	f.BoolVar(&c.console, "console", envOr("TROVE_CONSOLE", "true") != "false", "serve the web console under /console/ (/ redirects there); --console=false turns it off (env TROVE_CONSOLE)")
	f.BoolVar(&c.consoleSecureCookie, "console-secure-cookie", envOr("TROVE_CONSOLE_SECURE_COOKIE", "false") == "true", "mark the console's session cookie Secure although this server speaks plain HTTP, for a proxy in front that terminates TLS (env TROVE_CONSOLE_SECURE_COOKIE)")
	f.StringVar(&c.tlsCert, "tls-cert", os.Getenv("TROVE_TLS_CERT"), "serve HTTPS (and HTTP/2) with this PEM certificate (chain); re-read when the file changes, no restart needed (env TROVE_TLS_CERT)")
	f.StringVar(&c.tlsKey, "tls-key", os.Getenv("TROVE_TLS_KEY"), "the PEM private key of --tls-cert (env TROVE_TLS_KEY)")
	f.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may take to finish on SIGINT/SIGTERM")
	dt := httpapi.DefaultTimeouts()
	f.DurationVar(&c.timeouts.ReadHeader, "read-header-timeout", dt.ReadHeader, "how long a client may take to send a request's line and headers; past it the connection is closed")
	f.DurationVar(&c.timeouts.Body, "body-timeout", dt.Body, "how long a client may take to send a request's body once its headers are in; past it the request gets 408")
	f.DurationVar(&c.timeouts.Write, "write-timeout", dt.Write, "how long a client may take to read one response, from its first byte; past it the connection is closed")
	f.DurationVar(&c.timeouts.Idle, "idle-timeout", dt.Idle, "how long a keep-alive connection may wait for its next request")
	f.DurationVar(&c.timeouts.Request, requestTimeoutFlag, dt.Request, "deadline of a request's work, from its start or, with a body, from when the body is in; past it the answer is a retryable 503 (the change feed's long polls and streams are exempt); also bounds each database call of background jobs (env "+requestTimeoutEnv+")")
	for _, lf := range limitFlags {
		f.IntVar(lf.field(&c.limits), lf.name, *lf.field(&c.limits), lf.help+" (env "+lf.env+")")
	}
	f.DurationVar(&c.limits.VersionRetention, retentionFlag, c.limits.VersionRetention, "delete versions older than this, except each live memory's current one (env "+retentionEnv+")")
	addDreamFlags(f, &c.dreams)
	addSessionLoopFlags(f, &c.sessionLoop)
	addWebhookFlags(f, &c.webhooks)
}

// The request deadline flag and its environment variable.
const requestTimeoutFlag, requestTimeoutEnv = "request-timeout", "TROVE_REQUEST_TIMEOUT"

// resolveRequestTimeout returns --request-timeout, else TROVE_REQUEST_TIMEOUT
// when set, else d (the flag's default).
func resolveRequestTimeout(changed func(flag string) bool, d time.Duration) (time.Duration, error) {
	if ev := strings.TrimSpace(os.Getenv(requestTimeoutEnv)); ev != "" && !changed(requestTimeoutFlag) {
		v, err := time.ParseDuration(ev)
		if err != nil {
			return 0, fmt.Errorf("%s must be a positive duration such as 30s, got %q", requestTimeoutEnv, ev)
		}
		if v <= 0 {
			return 0, fmt.Errorf("%s must be a positive duration such as 30s, got %s", requestTimeoutEnv, v)
		}
		return v, nil
	}
	return d, nil
}

// defaultAuthCache is serve's --auth-cache: short enough that a revocation
// made by another process is honoured within two seconds.
const defaultAuthCache = 2 * time.Second

// checkTimeouts requires every timeout to be positive; the error names the
// flag at fault.
func checkTimeouts(t httpapi.Timeouts) error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"read-header-timeout", t.ReadHeader}, {"body-timeout", t.Body}, {"write-timeout", t.Write}, {"idle-timeout", t.Idle}, {requestTimeoutFlag, t.Request}} {
		if f.d <= 0 {
			return fmt.Errorf("--%s must be a positive duration such as 30s, got %s", f.name, f.d)
		}
	}
	return nil
}

func runServe(e *env, c serveConfig) error {
	ctx := e.ctx
	if c.authCache < 0 {
		return fmt.Errorf("--auth-cache must not be negative, got %s", c.authCache)
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	b, err := openBackendWith(ctx, c.data, c.dbURL, true, core.Options{Logger: log, AuthCacheTTL: c.authCache, Limits: c.limits, Webhooks: c.webhooks.coreOptions()}, c.db)
	if err != nil {
		return err
	}
	defer b.close()

	if err := ensureFirstKey(ctx, e, b, c.data); err != nil {
		return err
	}
	certs, err := serveCerts(c, log)
	if err != nil {
		return err
	}
	handler := newServeHandler(c, b, log)
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", c.addr, err)
	}
	// net/http with c.timeouts; its connection errors go to log at Warn,
	// redacted.
	srv := handler.HTTPServer()
	url := "http://" + ln.Addr().String()
	if certs != nil {
		srv.TLSConfig = &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12}
		url = "https://" + ln.Addr().String()
	}
	announceServe(e, c, b, ln.Addr(), url, certs != nil, log)

	stopRunners, err := startRunners(c, b.svc, log)
	if err != nil {
		return err
	}
	defer stopRunners() // before b.close: the dream runner records how its dreams ended
	stopRetention := startRetention(b.svc)
	return serveUntilStopped(ctx, e, c, srv, ln, certs != nil, stopRetention, log)
}

// serveCerts checks --tls-cert and --tls-key and loads them; nil (and no
// error) for plain HTTP.
func serveCerts(c serveConfig, log *slog.Logger) (*certfile.Reloader, error) {
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return nil, fmt.Errorf("--tls-cert and --tls-key go together: give both to serve HTTPS, or neither")
	}
	if c.tlsCert == "" {
		return nil, nil
	}
	certs, err := certfile.New(c.tlsCert, c.tlsKey)
	if err != nil {
		return nil, err
	}
	certs.OnError = func(err error) {
		log.Warn("TLS certificate changed but does not load; still serving the previous one", "error", err)
	}
	return certs, nil
}

// newServeHandler is the API server over b, with the console mounted
// unless --console=false and its own metrics registry.
func newServeHandler(c serveConfig, b *backend, log *slog.Logger) *httpapi.Server {
	var consoleHandler http.Handler
	if c.console {
		consoleHandler = console.New(console.Config{Services: b.svc, Sessions: b.svc, Dreams: b.svc, Auth: b.svc, Limits: c.limits, Logger: log, SecureCookie: c.consoleSecureCookie})
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return httpapi.NewServer(httpapi.Config{
		Services: b.svc,
		Sessions: b.svc,
		Events:   b.svc,
		Dreams:   b.svc,
		Auth:     b.svc,
		Logger:   log,
		// Managed Agents: agents, self-hosted environments, the work queue.
		Agents:       b.svc,
		Environments: b.svc,
		Work:         b.svc,
		Webhooks:     b.svc,
		// Room for a maximal memory with every byte JSON-escaped.
		MaxBodyBytes: maxBodyFor(c.limits.MaxContentBytes),
		Metrics:      reg,
		Health:       b.health,
		DreamRunner:  c.dreams.runnerState(),
		Timeouts:     c.timeouts,
		Console:      consoleHandler,
		// The credential cache is core's (Options.AuthCacheTTL): it sees
		// revocations made through this process at once.
	})
}

// announceServe tells where the server listens (stdout, and the log with
// the PostgreSQL pool's settings), warning about plain HTTP on an address
// that is not loopback.
func announceServe(e *env, c serveConfig, b *backend, addr net.Addr, url string, https bool, log *slog.Logger) {
	fmt.Fprintf(e.stdout, "trove: listening on %s (%s %s)\n", url, b.kind, b.where)
	if !https && !isLoopback(addr) {
		fmt.Fprintf(e.stderr, "trove: warning: serving plain HTTP on %s, which is not a loopback address: API keys and console sessions cross the network unencrypted; use --tls-cert and --tls-key\n", addr)
		log.Warn("plain HTTP on a non-loopback address; use --tls-cert and --tls-key", "addr", addr.String())
	}
	if hint := loginHint(url, c.data); hint != "" {
		fmt.Fprintln(e.stdout, hint)
	}
	if c.console {
		fmt.Fprintf(e.stdout, "trove: console at %s/console/\n", url)
	}
	log.Info("listening on "+url, "database", b.kind, "where", b.where)
	if pg, ok := b.driver.(*postgres.DB); ok {
		pc := pg.Pool().Config()
		rp := pc.ConnConfig.RuntimeParams
		log.Info("postgres pool", "max_conns", pc.MaxConns, "connect_timeout", pc.ConnConfig.ConnectTimeout,
			"statement_timeout_ms", rp["statement_timeout"], "lock_timeout_ms", rp["lock_timeout"],
			"idle_in_transaction_session_timeout_ms", rp["idle_in_transaction_session_timeout"], "tcp_user_timeout_ms", rp["tcp_user_timeout"],
			"request_timeout", c.timeouts.Request)
	}
}

// startRunners starts the background runners of serve: dreams, the
// managed sessions' agent loop and the webhook sender. stop stops them in
// the reverse order; on an error the ones started are stopped already.
func startRunners(c serveConfig, svc *core.Service, log *slog.Logger) (stop func(), err error) {
	stopDreams, err := startDreams(c.dreams, svc, log)
	if err != nil {
		return nil, err
	}
	stopSessions, err := startSessionLoop(c.sessionLoop, c.dreams, svc, log)
	if err != nil {
		stopDreams()
		return nil, err
	}
	stopWebhooks, err := startWebhooks(c.webhooks, svc, log)
	if err != nil {
		stopSessions()
		stopDreams()
		return nil, err
	}
	return func() { stopWebhooks(); stopSessions(); stopDreams() }, nil
}

// startRetention deletes expired versions hourly in the background until
// stop, which waits for the pass under way.
func startRetention(svc *core.Service) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = svc.RunRetention(ctx, time.Hour)
	}()
	return func() { cancel(); <-done }
}

// serveUntilStopped serves srv on ln (HTTPS when https) until serving fails
// or ctx ends, then lets in-flight requests finish within
// --shutdown-timeout. stopRetention is called once serving has ended.
func serveUntilStopped(ctx context.Context, e *env, c serveConfig, srv *http.Server, ln net.Listener, https bool, stopRetention func(), log *slog.Logger) error {
	serveErr := make(chan error, 1)
	go func() {
		if https {
			serveErr <- srv.ServeTLS(ln, "", "")
			return
		}
		serveErr <- srv.Serve(ln)
	}()
	select {
	case err := <-serveErr: // never http.ErrServerClosed: only Shutdown, below, closes it
		stopRetention()
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight requests", "timeout", c.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		srv.Close() // past the timeout: drop what is left
	}
	stopRetention()
	if err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	fmt.Fprintln(e.stdout, "trove: stopped")
	return nil
}

// isLoopback reports whether a listener's address is a loopback address
// (an unspecified address such as 0.0.0.0 is not).
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// ensureFirstKey creates an API key in the default workspace when the
// database has none, prints it once and saves it to <data>/api_key (0600).
// Of several nodes starting together on one empty database exactly one
// creates it (core's EnsureFirstKey); the others print nothing about a key.
func ensureFirstKey(ctx context.Context, e *env, b *backend, data string) error {
	k, secret, created, err := b.svc.EnsureFirstKey(ctx, defaultWorkspace, "default")
	if err != nil {
		return fmt.Errorf("creating the first API key: %w", err)
	}
	if !created {
		return nil
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	path := filepath.Join(data, "api_key")
	if err := atomicfile.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("saving the API key: %w", err)
	}
	fmt.Fprintf(e.stdout, "trove: created API key %s in workspace %s (saved to %s; shown once):\n%s\n", k.ID, k.WorkspaceID, path, secret)
	return nil
}
