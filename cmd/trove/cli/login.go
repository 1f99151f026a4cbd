package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// probeResult is what one authenticated request to a server found.
type probeResult struct {
	workspace string // the workspace the server echoed for the key
}

// probe checks that the server at base answers and accepts key, with one
// GET /v1/memory_stores?limit=1. Its errors are *trove.Error: EUNAVAILABLE
// when the server cannot be reached, the server's own refusal otherwise.
func probe(ctx context.Context, base, key string) (*probeResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/memory_stores?limit=1", nil)
	if err != nil {
		return nil, trove.Errorf(trove.EINVALID, "%q is not a server URL: %v", base, err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		var env struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		_ = json.Unmarshal(body, &env)
		code := trove.EINVALID
		switch res.StatusCode {
		case http.StatusUnauthorized:
			code = trove.EUNAUTHENTICATED
		case http.StatusForbidden:
			code = trove.EFORBIDDEN
		case http.StatusNotFound:
			code = trove.ENOTFOUND
			env.Error.Message = "it does not serve the memory stores API at /v1/memory_stores (is this a Trove server?)"
		case http.StatusServiceUnavailable, http.StatusBadGateway, http.StatusGatewayTimeout:
			code = trove.EUNAVAILABLE
		}
		if env.Error.Message == "" {
			env.Error.Message = "the server answered " + res.Status
		}
		return nil, trove.Errorf(code, "%s", env.Error.Message)
	}
	return &probeResult{workspace: res.Header.Get("Anthropic-Workspace-Id")}, nil
}

// checkServerURL refuses a URL that is not http(s)://host[:port][/path].
func checkServerURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageError("%q is not a server URL: give it as http://HOST:PORT, e.g. http://127.0.0.1:7007", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

func newLoginCmd(e *env) *cobra.Command {
	var apiKey string
	cmd := &cobra.Command{
		Use:   "login URL [--api-key KEY]",
		Short: "Point the client at a Trove server: check the key and save URL and key",
		Long: `login checks that the server at URL answers and accepts the API key, then
saves both in the config file (` + "$XDG_CONFIG_HOME/trove/config.json" + `, mode 0600).
Client commands use that server from then on, unless a flag or environment
variable says otherwise.

The key comes from --api-key, else from standard input: typed at a prompt on a
terminal, or piped, e.g. trove login http://127.0.0.1:7007 < DATA/api_key.

` + targetRule,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, err := checkServerURL(args[0])
			if err != nil {
				return err
			}
			key := apiKey
			if !cmd.Flags().Changed("api-key") {
				if key, err = readKey(e); err != nil {
					return err
				}
			}
			if key == "" {
				return usageError("no API key given: pass --api-key KEY or give it on standard input")
			}
			t := &target{url: base, key: key, keyFrom: "the key given", from: "trove login"}
			setTarget(cmd, t)
			pr, err := probe(e.ctx, base, key)
			if err != nil {
				return err
			}
			path, err := saveConfig(&cliConfig{URL: base, APIKey: key})
			if err != nil {
				return fmt.Errorf("saving the login: %w", err)
			}
			fmt.Fprintf(e.stdout, "logged in to %s (workspace %s); saved to %s\n", base, pr.workspace, path)
			return nil
		},
	}
	cmd.Flags().StringVar(&apiKey, "api-key", "", "the API key (default: read from standard input)")
	return cmd
}

// readKey reads the API key from standard input: without echo after a
// prompt on a terminal, else the first line.
func readKey(e *env) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(e.stderr, "API key: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("reading the API key: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("reading the API key from standard input: %w", err)
	}
	return strings.TrimSpace(line), nil
}

func newLogoutCmd(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Forget the server saved by trove login",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := configPath()
			if err != nil {
				return err
			}
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			fmt.Fprintf(e.stdout, "removed %s\n", path)
			return nil
		},
	}
}

func newStatusCmd(e *env) *cobra.Command {
	var sf storeFlags
	var out output
	cmd := &cobra.Command{
		Use:   "status [-o table|json]",
		Short: "Print where client commands act (server or database, workspace) and whether it answers",
		Long: `status prints the target client commands use, the rule that chose it, the
workspace, and whether it answers. It exits 1 when the target does not answer.
With -o json it prints the same as one JSON object.

` + targetRule,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			t, err := sf.resolve(cmd)
			if err != nil {
				return err
			}
			setTarget(cmd, t)
			var r statusReport
			if t.remote() {
				err = r.remote(e.ctx, t)
			} else {
				err = r.local(e.ctx, cmd, &sf, t)
			}
			if out.json() {
				if jerr := writeJSON(e.stdout, r); jerr != nil {
					return jerr
				}
			} else {
				r.print(e.stdout)
			}
			return err
		},
	}
	sf.register(cmd)
	out.register(cmd.Flags())
	return cmd
}

// statusReport is what trove status found; its JSON is -o json's.
type statusReport struct {
	Server     string `json:"server,omitempty"`
	Database   string `json:"database,omitempty"`
	ChosenBy   string `json:"chosen_by"`
	KeyFrom    string `json:"key_from,omitempty"`
	Workspace  string `json:"workspace,omitempty"`
	Reachable  bool   `json:"reachable"`
	KeyRefused bool   `json:"key_refused,omitempty"`
}

// remote probes the server t with its key.
func (r *statusReport) remote(ctx context.Context, t *target) error {
	r.Server, r.ChosenBy, r.KeyFrom = t.url, t.from, t.keyFrom
	pr, err := probe(ctx, t.url, t.key)
	switch trove.ErrorCode(err) {
	case "":
		r.Workspace, r.Reachable = pr.workspace, true
	case trove.EUNAUTHENTICATED, trove.EFORBIDDEN:
		r.Reachable, r.KeyRefused = true, true
	}
	return err
}

// local opens the local database t and lists one store.
func (r *statusReport) local(ctx context.Context, cmd *cobra.Command, sf *storeFlags, t *target) error {
	r.Database, r.ChosenBy = t.where(), t.from
	if t.dbURL == "" {
		if _, err := os.Stat(r.Database); err != nil {
			return fmt.Errorf("no database at %s: start trove serve --data %s once, or pass the right --data", r.Database, t.data)
		}
	}
	return withConn(ctx, cmd, sf, func(k *conn) error {
		if _, err := k.svc.ListStores(k.ctx, trove.ListStoresParams{Limit: 1}); err != nil {
			return err
		}
		r.Workspace, r.Reachable = k.p.WorkspaceID, true
		return nil
	})
}

// print writes the report as aligned lines.
func (r *statusReport) print(w io.Writer) {
	if r.Server != "" {
		fmt.Fprintf(w, "server:    %s\nchosen by: %s\nkey from:  %s\n", r.Server, r.ChosenBy, r.KeyFrom)
	} else {
		fmt.Fprintf(w, "database:  %s\nchosen by: %s\n", r.Database, r.ChosenBy)
	}
	switch {
	case r.KeyRefused:
		fmt.Fprintf(w, "reachable: yes, but the key is refused\n")
	case !r.Reachable:
		fmt.Fprintf(w, "reachable: no\n")
	default:
		fmt.Fprintf(w, "workspace: %s\nreachable: yes\n", r.Workspace)
	}
}

// loginHint is the line serve prints to point a client at the server
// listening at listenURL: trove login with the key saved in <data>/api_key,
// or "" when there is no such file. A wildcard listen address becomes the
// loopback one.
func loginHint(listenURL, data string) string {
	keyFile := filepath.Join(data, "api_key")
	if _, err := os.Stat(keyFile); err != nil {
		return ""
	}
	u := listenURL
	if pu, err := url.Parse(listenURL); err == nil {
		if host, port, err := net.SplitHostPort(pu.Host); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				pu.Host = net.JoinHostPort("127.0.0.1", port)
				u = pu.String()
			}
		}
	}
	if abs, err := filepath.Abs(keyFile); err == nil {
		keyFile = abs
	}
	return fmt.Sprintf("trove: point the client at this server with: trove login %s < %s", u, shellQuote(keyFile))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
