package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/atomicfile"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
)

// closeFn releases what openLocal opened.
type closeFn func() error

// defaultWorkspace is the workspace of the key the first serve creates.
const defaultWorkspace = "wrkspc_default"

// defaultDataDir returns $TROVE_DATA, else $XDG_DATA_HOME/trove, else
// ~/.local/share/trove.
func defaultDataDir() string {
	if d := os.Getenv("TROVE_DATA"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "trove")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "trove")
	}
	return filepath.Join(".", "trove-data")
}

// isPostgresURL reports whether databaseURL selects the PostgreSQL driver.
func isPostgresURL(databaseURL string) bool {
	return strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://")
}

// backend is an open database with the core service over it.
type backend struct {
	svc    *core.Service
	driver storage.Driver
	kind   string // "sqlite" or "postgres"
	where  string // the SQLite file, or the PostgreSQL URL without password
	close  closeFn
}

// health reports whether the database answers a query.
func (b *backend) health(ctx context.Context) error {
	return b.driver.Read(ctx, func(tx storage.Tx) error {
		_, err := tx.StoreList(ctx, storage.StoreListParams{WorkspaceID: "wrkspc_healthz", Limit: 1})
		return err
	})
}

// schema returns the database's schema version and the newest this build
// knows; ok is false for a driver without versioned schemas.
func (b *backend) schema(ctx context.Context) (have, known int, ok bool, err error) {
	m, isM := b.driver.(storage.Migrator)
	if !isM {
		return 0, 0, false, nil
	}
	have, known, err = m.SchemaVersion(ctx)
	return have, known, true, err
}

// openBackend opens the database chosen by databaseURL: PostgreSQL for a
// postgres:// or postgresql:// URL, otherwise SQLite at <dataDir>/trove.db
// (dataDir is created with mode 0700). With autoMigrate, missing migrations
// are applied. It refuses a database whose schema is newer than this build
// knows, and (without autoMigrate) one that is older.
func openBackend(ctx context.Context, dataDir, databaseURL string, autoMigrate bool, log *slog.Logger) (*backend, error) {
	return openBackendWith(ctx, dataDir, databaseURL, autoMigrate, core.Options{Logger: log}, dbOptions{})
}

// dbOptions are the PostgreSQL pool settings serve exposes; SQLite ignores
// them. A zero field means the URL's setting, else the driver's default
// (see postgres.Open).
type dbOptions struct {
	maxConns       int32
	connectTimeout time.Duration
	// Server-side guards and time bounds (postgres.Options).
	statementTimeout, lockTimeout, idleInTxTimeout, tcpTimeout, opTimeout time.Duration
}

// openBackendWith is openBackend with the core options of the service
// (opts.Logger also receives the SQLite driver's logs) and the PostgreSQL
// pool settings.
func openBackendWith(ctx context.Context, dataDir, databaseURL string, autoMigrate bool, opts core.Options, dbo dbOptions) (*backend, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &backend{}
	switch {
	case isPostgresURL(databaseURL):
		db, err := postgres.Open(ctx, databaseURL, postgres.Options{AutoMigrate: autoMigrate, MaxConns: dbo.maxConns, ConnectTimeout: dbo.connectTimeout,
			StatementTimeout: dbo.statementTimeout, LockTimeout: dbo.lockTimeout, IdleInTxTimeout: dbo.idleInTxTimeout, TCPTimeout: dbo.tcpTimeout, OpTimeout: dbo.opTimeout})
		if err != nil {
			return nil, fmt.Errorf("opening PostgreSQL: %w", err)
		}
		b.driver, b.kind, b.where, b.close = db, "postgres", postgres.RedactDSN(databaseURL), db.Close
	case databaseURL != "":
		return nil, trove.Errorf(trove.EINVALID, "--database must be a postgres:// or postgresql:// URL (leave it empty for SQLite in --data), got %q", postgres.RedactDSN(databaseURL))
	default:
		if dataDir == "" {
			return nil, trove.Errorf(trove.EINVALID, "no data directory: pass --data or set TROVE_DATA")
		}
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the data directory: %w", err)
		}
		path := filepath.Join(dataDir, "trove.db")
		db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: autoMigrate, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("opening %s: %w", path, err)
		}
		b.driver, b.kind, b.where, b.close = db, "sqlite", path, db.Close
	}
	have, known, ok, err := b.schema(ctx)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("reading the schema version: %w", err)
	}
	if ok && have > known {
		b.close()
		return nil, trove.Errorf(trove.EINVALID, "the database schema (version %d) is newer than this trove knows (%d): upgrade trove", have, known)
	}
	if ok && have < known && !autoMigrate {
		b.close()
		return nil, trove.Errorf(trove.EINVALID, "the database schema (version %d) is older than this trove needs (%d): run trove migrate", have, known)
	}
	opts.Logger = log
	b.svc = core.New(b.driver, opts)
	return b, nil
}

// openLocal opens the database chosen by databaseURL (see openBackend) and
// returns the core service over it with the function that closes it.
func openLocal(ctx context.Context, dataDir, databaseURL string, autoMigrate bool) (*core.Service, closeFn, error) {
	b, err := openBackend(ctx, dataDir, databaseURL, autoMigrate, nil)
	if err != nil {
		return nil, nil, err
	}
	return b.svc, b.close, nil
}

// ---- the target: where client commands act ----

// targetRule is the one rule that picks the target, as help and README
// state it.
const targetRule = `Commands reach the server or database named by --url (with --api-key) or
--data/--database, else by TROVE_URL (with TROVE_API_KEY) or
TROVE_DATA/TROVE_DATABASE, else the server saved by "trove login URL", else
the local database in ` + "~/.local/share/trove" + ` when one exists there.`

// target is where a client command acts: a Trove server (url and key) or a
// local database (data or dbURL). from says which rule chose it.
type target struct {
	url, key string // a server
	keyFrom  string // where the key came from

	data, dbURL string // a local database

	from string // "--url", "TROVE_URL", "trove login (PATH)", "--data", …
}

// remote reports whether t is a server.
func (t *target) remote() bool { return t.url != "" }

// String names the target for messages: the server's URL or the database,
// and the rule that chose it.
func (t *target) String() string {
	switch {
	case t.remote():
		return fmt.Sprintf("server %s (from %s)", t.url, t.from)
	case t.dbURL != "":
		return fmt.Sprintf("PostgreSQL database %s (from %s)", postgres.RedactDSN(t.dbURL), t.from)
	}
	return fmt.Sprintf("local database %s (from %s)", filepath.Join(t.data, "trove.db"), t.from)
}

// where names the target without the rule: the URL or the database.
func (t *target) where() string {
	switch {
	case t.remote():
		return t.url
	case t.dbURL != "":
		return postgres.RedactDSN(t.dbURL)
	}
	return filepath.Join(t.data, "trove.db")
}

// storeFlags are the flags that choose the target (see targetRule): a local
// database (--data/--database) or a server (--url and --api-key).
type storeFlags struct {
	data, dbURL, url, apiKey, workspace string

	// t is the target openServices chose.
	t *target
}

// register adds the flags to cmd.
func (sf *storeFlags) register(cmd *cobra.Command) { sf.addTo(cmd.Flags()) }

// registerPersistent adds the flags to cmd and its subcommands.
func (sf *storeFlags) registerPersistent(cmd *cobra.Command) { sf.addTo(cmd.PersistentFlags()) }

func (sf *storeFlags) addTo(f *pflag.FlagSet) {
	f.StringVar(&sf.url, "url", "", "base URL of a Trove server (env TROVE_URL; default: the server saved by trove login)")
	f.StringVar(&sf.apiKey, "api-key", "", "API key or session token for --url (env TROVE_API_KEY)")
	f.StringVar(&sf.data, "data", "", "data directory of a local database (env TROVE_DATA)")
	f.StringVar(&sf.dbURL, "database", "", "PostgreSQL URL of a local database (env TROVE_DATABASE)")
	f.StringVar(&sf.workspace, "workspace", defaultWorkspace, "workspace of a local database, when <data>/api_key does not name one")
}

// resolve picks the target by targetRule; a local data directory is made
// absolute.
func (sf *storeFlags) resolve(cmd *cobra.Command) (*target, error) {
	t, err := sf.pick(cmd)
	if err == nil && !t.remote() && t.data != "" {
		if abs, aerr := filepath.Abs(t.data); aerr == nil {
			t.data = abs
		}
	}
	return t, err
}

func (sf *storeFlags) pick(cmd *cobra.Command) (*target, error) {
	fl := cmd.Flags()
	urlFlag := fl.Changed("url")
	localFlag := fl.Changed("data") || fl.Changed("database")
	switch {
	case urlFlag && localFlag:
		return nil, usageError("use either --url for a server or --data/--database for a local database, not both")
	case urlFlag:
		return sf.remoteTarget(fl, sf.url, "--url", nil)
	case localFlag:
		from := "--data"
		if fl.Changed("database") {
			from = "--database"
		}
		data := sf.data
		if data == "" {
			data = defaultDataDir()
		}
		return &target{data: data, dbURL: sf.dbURL, from: from}, nil
	}
	if u := os.Getenv("TROVE_URL"); u != "" {
		return sf.remoteTarget(fl, u, "TROVE_URL", nil)
	}
	if d := os.Getenv("TROVE_DATABASE"); d != "" {
		return &target{data: defaultDataDir(), dbURL: d, from: "TROVE_DATABASE"}, nil
	}
	if d := os.Getenv("TROVE_DATA"); d != "" {
		return &target{data: d, from: "TROVE_DATA"}, nil
	}
	cfg, path, err := loadConfig()
	if err != nil {
		return nil, err
	}
	if cfg.URL != "" {
		return sf.remoteTarget(fl, cfg.URL, "trove login ("+path+")", cfg)
	}
	data := defaultDataDir()
	db := filepath.Join(data, "trove.db")
	if _, err := os.Stat(db); err != nil {
		return nil, usageError("no server chosen and no local database at %s: run trove login URL (or set TROVE_URL and TROVE_API_KEY) to use a server, or pass --data DIR for a local database", db)
	}
	return &target{data: data, from: "the default data directory"}, nil
}

// remoteTarget is the server at u; its key comes from --api-key, else
// TROVE_API_KEY, else the login config when it saved the same URL.
func (sf *storeFlags) remoteTarget(fl *pflag.FlagSet, u, from string, cfg *cliConfig) (*target, error) {
	t := &target{url: strings.TrimRight(u, "/"), from: from}
	switch {
	case fl.Changed("api-key"):
		t.key, t.keyFrom = sf.apiKey, "--api-key"
	case os.Getenv("TROVE_API_KEY") != "":
		t.key, t.keyFrom = os.Getenv("TROVE_API_KEY"), "TROVE_API_KEY"
	default:
		if cfg == nil {
			if c, _, err := loadConfig(); err == nil && strings.TrimRight(c.URL, "/") == t.url {
				cfg = c
			}
		}
		if cfg != nil && cfg.APIKey != "" {
			t.key, t.keyFrom = cfg.APIKey, "trove login"
		}
	}
	if t.key == "" {
		if from == "TROVE_URL" {
			return nil, usageError("TROVE_URL is set but TROVE_API_KEY is empty: export the server's API key (or a session token) in TROVE_API_KEY")
		}
		return nil, usageError("no API key for %s: pass --api-key, set TROVE_API_KEY, or run trove login %s", t.url, t.url)
	}
	return t, nil
}

// openServices opens the target's services (see targetRule): an
// httpapi.Client for a server, otherwise the local database. For a local
// database it returns the principal writes are attributed to: the key saved
// in <data>/api_key when there is one, else an actor-less principal in the
// chosen workspace. The returned function releases what was opened. The
// target is kept in sf.t and in cmd's context, so that errors name it.
func (sf *storeFlags) openServices(ctx context.Context, cmd *cobra.Command) (trove.Services, *trove.Principal, func() error, error) {
	t, err := sf.resolve(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	sf.t = t
	setTarget(cmd, t)
	if t.remote() {
		return httpapi.NewClient(t.url, t.key), nil, func() error { return nil }, nil
	}
	svc, closeDB, err := openLocal(ctx, t.data, t.dbURL, true)
	if err != nil {
		return nil, nil, nil, err
	}
	p := &trove.Principal{WorkspaceID: sf.workspace}
	if raw, err := os.ReadFile(filepath.Join(t.data, "api_key")); err == nil && !cmd.Flags().Changed("workspace") {
		if kp, err := svc.Authenticate(ctx, strings.TrimSpace(string(raw))); err == nil {
			p = kp
		}
	}
	return svc, p, closeDB, nil
}

// targetKey keys the target in a command's context.
type targetKey struct{}

// setTarget records t in cmd's context.
func setTarget(cmd *cobra.Command, t *target) {
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	cmd.SetContext(context.WithValue(parent, targetKey{}, t))
}

// targetOf returns the target a command opened, or nil.
func targetOf(cmd *cobra.Command) *target {
	if cmd == nil || cmd.Context() == nil {
		return nil
	}
	t, _ := cmd.Context().Value(targetKey{}).(*target)
	return t
}

// cliConfig is what trove login saves.
type cliConfig struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// configPath is $XDG_CONFIG_HOME/trove/config.json (os.UserConfigDir).
func configPath() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory: %w", err)
	}
	return filepath.Join(d, "trove", "config.json"), nil
}

// loadConfig reads the login config; a missing file is an empty config.
func loadConfig() (*cliConfig, string, error) {
	path, err := configPath()
	if err != nil {
		return &cliConfig{}, "", nil // no home: nothing saved
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &cliConfig{}, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("reading %s: %w", path, err)
	}
	var c cliConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, path, fmt.Errorf("%s is not valid JSON (%v): fix it, or delete it and run trove login again", path, err)
	}
	return &c, path, nil
}

// saveConfig writes c to the login config with mode 0600 (its directory
// 0700) and returns its path.
func saveConfig(c *cliConfig) (string, error) {
	path, err := configPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return "", err
	}
	return path, atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}
