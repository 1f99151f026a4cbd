package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
)

// TestTargetRule checks the rule targetRule states: flags, then the
// environment, then the login config, then an existing default database;
// and that the login's key is never sent to another URL.
func TestTargetRule(t *testing.T) {
	cfgHome := t.TempDir()
	dataHome := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgHome)
	t.Setenv("XDG_DATA_HOME", dataHome)
	for _, k := range []string{"TROVE_URL", "TROVE_API_KEY", "TROVE_DATA", "TROVE_DATABASE"} {
		t.Setenv(k, "")
	}
	login := func(t *testing.T) {
		t.Helper()
		if _, err := saveConfig(&cliConfig{URL: "http://saved:7007", APIKey: "trove_sk_saved"}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(filepath.Join(cfgHome, "trove", "config.json")) })
	}
	tests := []struct {
		name    string
		login   bool
		env     map[string]string
		args    []string
		want    string // target.String(), or the error's start
		wantKey string
	}{
		{name: "nothing", want: "no server chosen and no local database at " + filepath.Join(dataHome, "trove", "trove.db")},
		{name: "login", login: true, want: "server http://saved:7007 (from trove login (" + filepath.Join(cfgHome, "trove", "config.json") + "))", wantKey: "trove_sk_saved"},
		{name: "env url over login, login key not sent", login: true, env: map[string]string{"TROVE_URL": "http://other:1"}, want: "TROVE_URL is set but TROVE_API_KEY is empty"},
		{name: "env url is the login's: its key", login: true, env: map[string]string{"TROVE_URL": "http://saved:7007/"}, want: "server http://saved:7007 (from TROVE_URL)", wantKey: "trove_sk_saved"},
		{name: "env key", login: true, env: map[string]string{"TROVE_URL": "http://other:1", "TROVE_API_KEY": "k"}, want: "server http://other:1 (from TROVE_URL)", wantKey: "k"},
		{name: "env data over login", login: true, env: map[string]string{"TROVE_DATA": "/srv/trove"}, want: "local database /srv/trove/trove.db (from TROVE_DATA)"},
		{name: "env database", env: map[string]string{"TROVE_DATABASE": "postgres://u:secret@h/db"}, want: "PostgreSQL database postgres://u:xxxxx@h/db (from TROVE_DATABASE)"},
		{name: "flag url over env data", env: map[string]string{"TROVE_DATA": "/srv/trove"}, args: []string{"--url", "http://flag:1", "--api-key", "f"}, want: "server http://flag:1 (from --url)", wantKey: "f"},
		{name: "flag url without key", args: []string{"--url", "http://flag:1"}, want: "no API key for http://flag:1: pass --api-key"},
		{name: "flag data over env url", env: map[string]string{"TROVE_URL": "http://other:1", "TROVE_API_KEY": "k"}, args: []string{"--data", "/d"}, want: "local database /d/trove.db (from --data)"},
		{name: "both flags", args: []string{"--data", "/d", "--url", "http://x:1"}, want: "use either --url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.login {
				login(t)
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var sf storeFlags
			cmd := &cobra.Command{Use: "x"}
			sf.register(cmd)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			tg, err := sf.resolve(cmd)
			got := ""
			if err != nil {
				got = errorText(err)
			} else {
				got = tg.String()
				if tg.key != tt.wantKey {
					t.Errorf("key = %q, want %q", tg.key, tt.wantKey)
				}
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("target = %q, want %q…", got, tt.want)
			}
		})
	}
	// A default database that exists is used.
	if err := os.MkdirAll(filepath.Join(dataHome, "trove"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataHome, "trove", "trove.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var sf storeFlags
	cmd := &cobra.Command{Use: "x"}
	sf.register(cmd)
	tg, err := sf.resolve(cmd)
	if err != nil || tg.String() != "local database "+filepath.Join(dataHome, "trove", "trove.db")+" (from the default data directory)" {
		t.Errorf("default = %v, %v", tg, err)
	}
}

func TestErrorTextAndExitCode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		text string
		code int
	}{
		{troveErr("not_found", "no store named %q", "x"), `no store named "x"`, exitNotFound},
		{wrapf("opening: %w", troveErr("invalid", "bad")), "opening: bad", exitFailed},
		{troveErr("precondition", "changed"), "changed", exitConflict},
		{troveErr("path_conflict", "taken"), "taken", exitConflict},
		{usageError("trove: bad %s", "flag"), "bad flag", exitUsage},
	} {
		if got := errorText(tt.err); got != tt.text {
			t.Errorf("errorText(%v) = %q, want %q", tt.err, got, tt.text)
		}
		if got := exitCode(tt.err); got != tt.code {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.code)
		}
	}
}

func troveErr(code, format string, args ...any) error { return trove.Errorf(code, format, args...) }

func wrapf(format string, err error) error { return fmt.Errorf(format, err) }
