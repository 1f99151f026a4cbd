package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/trovehq/trove/storage/postgres"
)

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

// journalKey names the target in the journals of import and apply: the
// server's URL, the PostgreSQL URL without password, or the absolute data
// directory, whichever rule chose it (not only --url or --data).
func (t *target) journalKey() string {
	switch {
	case t.remote():
		return t.url
	case t.dbURL != "":
		return postgres.RedactDSN(t.dbURL)
	}
	return t.data
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
