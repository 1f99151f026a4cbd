package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/lib/environments"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/tools/agenttoolset"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultMountRoot is where managed sessions mount their memory stores
// (their resources' mount_path).
const defaultMountRoot = "/mnt/memory"

// workerFlags holds worker's flags.
type workerFlags struct {
	url, envID, key, keyFile, mountRoot, workdir, workerID string
	maxIdle, leaseTTL                                      time.Duration
	verbose                                                bool
}

func newWorkerCmd(e *env) *cobra.Command {
	var w workerFlags
	cmd := &cobra.Command{
		Use:   "worker --environment ENV",
		Short: "Run a self-hosted environment's worker: the agent toolset and memory stores of its sessions",
		Long:  workerLong,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return w.run(e, cmd)
		},
	}
	w.register(cmd.Flags())
	return cmd
}

// workerLong is worker's help text.
const workerLong = `worker polls a self-hosted environment of a Trove server for work, and for
each session it claims downloads the session's memory stores to their mount
paths, runs the agent toolset (bash, read, write, edit, glob, grep) for the
agent's tool uses, syncs the stores back and lets go of the session when it is
idle. It is the official Go SDK's environments.EnvironmentWorker, unchanged,
pointed at Trove.

The server is --url, else TROVE_URL, else the server saved by trove login.
The environment key (made by trove environments create, or trove
environments keys create) is --environment-key, else --environment-key-file,
else TROVE_ENVIRONMENT_KEY or ANTHROPIC_ENVIRONMENT_KEY.

Memory stores are mounted at /mnt/memory/<slug>, which must not exist and
whose parent must be writable by the worker. --mount-root DIR puts them at
DIR/<slug> instead: the worker then maps /mnt/memory/ to DIR in the session's
mount paths and in the paths and commands of the agent's tool calls.`

// register defines worker's flags on f.
func (w *workerFlags) register(f *pflag.FlagSet) {
	f.StringVar(&w.url, "url", "", "base URL of the Trove server (env TROVE_URL; default: the server saved by trove login)")
	f.StringVar(&w.envID, "environment", "", "the self-hosted environment to work for (env TROVE_ENVIRONMENT_ID)")
	f.StringVar(&w.key, "environment-key", "", "the environment's key (env TROVE_ENVIRONMENT_KEY or ANTHROPIC_ENVIRONMENT_KEY)")
	f.StringVar(&w.keyFile, "environment-key-file", "", "a file holding the environment's key")
	f.StringVar(&w.mountRoot, "mount-root", defaultMountRoot, "directory the sessions' memory stores are mounted under (it must be writable by the worker)")
	f.StringVar(&w.workdir, "workdir", "", "working directory of the agent's tools (default: the current directory)")
	f.StringVar(&w.workerID, "worker-id", "", "name reported to the server (default: host name and a random suffix)")
	f.DurationVar(&w.maxIdle, "max-idle", environmentsDefaultMaxIdle, "how long a session stays claimed after its turn ended")
	f.DurationVar(&w.leaseTTL, "lease-ttl", 0, "the work lease each heartbeat asks for (desired_ttl_seconds; 5s to 300s); a worker that dies leaves its session to another this long after (default: the server's, 30s)")
	f.BoolVarP(&w.verbose, "verbose", "v", false, "log every claimed session and tool call")
}

// run checks the flags and runs the SDK's environment worker until ctx
// ends or it fails.
func (w *workerFlags) run(e *env, cmd *cobra.Command) error {
	if w.envID == "" {
		w.envID = os.Getenv("TROVE_ENVIRONMENT_ID")
	}
	if w.envID == "" {
		return usageError("worker: give the environment with --environment ENV (its ID, env_…)")
	}
	base, err := workerURL(w.url)
	if err != nil {
		return err
	}
	k, err := environmentKey(w.key, w.keyFile)
	if err != nil {
		return err
	}
	if w.workdir, err = workerWorkdir(w.workdir); err != nil {
		return err
	}
	root := filepath.Clean(w.mountRoot)
	if !filepath.IsAbs(root) {
		return usageError("worker: --mount-root must be an absolute path, got %q", w.mountRoot)
	}
	level := slog.LevelWarn
	if w.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	client, toolsFunc := workerClient(base, root, w.leaseTTL)
	wo := environments.EnvironmentWorkerOptions{
		EnvironmentID:  w.envID,
		EnvironmentKey: k,
		WorkerID:       w.workerID,
		Workdir:        w.workdir,
		ToolsFunc:      toolsFunc,
		Logger:         log,
	}
	if cmd.Flags().Changed("max-idle") {
		wo.MaxIdle = &w.maxIdle
	}
	fmt.Fprintf(e.stderr, "trove worker: polling environment %s at %s (memory stores under %s, workdir %s)\n", w.envID, base, root, w.workdir)
	worker := environments.NewEnvironmentWorker(client, wo)
	if err := worker.Run(cmd.Context()); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return nil
}

const environmentsDefaultMaxIdle = anthropic.DefaultMaxIdle

// workerWorkdir is the tools' working directory: dir, else the current
// one, made absolute.
func workerWorkdir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	return filepath.Abs(dir)
}

// workerClient is the SDK client of the worker polling base: with a mount
// root other than /mnt/memory, the session's mount paths and the agent's
// tool calls are mapped to it (and the toolset's tools with them); with
// leaseTTL, each heartbeat asks for that lease.
func workerClient(base, root string, leaseTTL time.Duration) (anthropic.Client, func(*agenttoolset.AgentToolContext) []anthropic.BetaTool) {
	opts := []option.RequestOption{option.WithBaseURL(base), option.WithAPIKey("unused")}
	var toolsFunc func(*agenttoolset.AgentToolContext) []anthropic.BetaTool
	if root != defaultMountRoot {
		m := mountMap{from: defaultMountRoot + "/", to: root + "/"}
		opts = append(opts, option.WithMiddleware(m.middleware))
		toolsFunc = func(env *agenttoolset.AgentToolContext) []anthropic.BetaTool {
			tools := agenttoolset.BetaAgentToolset20260401(env)
			for i, t := range tools {
				tools[i] = &mappedTool{BetaTool: t, m: m}
			}
			return tools
		}
	}
	if leaseTTL > 0 {
		opts = append(opts, option.WithMiddleware(desiredTTL(leaseTTL)))
	}
	return anthropic.NewClient(opts...), toolsFunc
}

// workerURL is the server the worker polls: flag, TROVE_URL, trove login.
func workerURL(flag string) (string, error) {
	if flag != "" {
		return strings.TrimRight(flag, "/"), nil
	}
	if u := os.Getenv("TROVE_URL"); u != "" {
		return strings.TrimRight(u, "/"), nil
	}
	if cfg, _, err := loadConfig(); err == nil && cfg.URL != "" {
		return strings.TrimRight(cfg.URL, "/"), nil
	}
	return "", usageError("worker: no server: pass --url, set TROVE_URL, or run trove login URL")
}

// environmentKey is the worker's credential: flag, file, environment.
func environmentKey(flag, file string) (string, error) {
	switch {
	case flag != "":
		return flag, nil
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", usageError("worker: reading --environment-key-file: %v", err)
		}
		if k := strings.TrimSpace(string(b)); k != "" {
			return k, nil
		}
		return "", usageError("worker: --environment-key-file %s is empty", file)
	}
	for _, v := range []string{"TROVE_ENVIRONMENT_KEY", "ANTHROPIC_ENVIRONMENT_KEY"} {
		if k := os.Getenv(v); k != "" {
			return k, nil
		}
	}
	return "", usageError("worker: no environment key: pass --environment-key or --environment-key-file, or set TROVE_ENVIRONMENT_KEY (trove environments create prints one)")
}

// mountMap maps the server's mount root to the worker's.
type mountMap struct{ from, to string }

var sessionPath = regexp.MustCompile(`^/v1/sessions/[^/]+$`)

// middleware rewrites the mount paths of a session the worker reads.
func (m mountMap) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || req.Method != http.MethodGet || !sessionPath.MatchString(req.URL.Path) || res.StatusCode != http.StatusOK {
		return res, err
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	res.Body.Close()
	if err != nil {
		return nil, err
	}
	var se map[string]any
	if json.Unmarshal(body, &se) == nil {
		if rs, ok := se["resources"].([]any); ok {
			for _, r := range rs {
				if rm, ok := r.(map[string]any); ok {
					if p, ok := rm["mount_path"].(string); ok && strings.HasPrefix(p, m.from) {
						rm["mount_path"] = m.to + strings.TrimPrefix(p, m.from)
					}
				}
			}
			if b, err := json.Marshal(se); err == nil {
				body = b
			}
		}
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	res.ContentLength = int64(len(body))
	res.Header.Del("Content-Length")
	return res, nil
}

// mappedTool is a toolset tool whose input's paths (and bash commands)
// under the server's mount root are mapped to the worker's.
type mappedTool struct {
	anthropic.BetaTool
	m mountMap
}

func (t *mappedTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	var in map[string]any
	if err := json.Unmarshal(input, &in); err == nil {
		for k, v := range in {
			if s, ok := v.(string); ok {
				in[k] = strings.ReplaceAll(s, t.m.from, t.m.to)
			}
		}
		if b, err := json.Marshal(in); err == nil {
			input = b
		}
	}
	out, err := t.BetaTool.Execute(ctx, input)
	if err != nil {
		return out, errors.New(strings.ReplaceAll(err.Error(), t.m.to, t.m.from))
	}
	for i := range out {
		if out[i].OfText != nil {
			out[i].OfText.Text = strings.ReplaceAll(out[i].OfText.Text, t.m.to, t.m.from)
		}
	}
	return out, nil
}

// Close releases the wrapped tool (bash's shell).
func (t *mappedTool) Close() error {
	if c, ok := t.BetaTool.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// desiredTTL adds desired_ttl_seconds to the worker's heartbeats (the SDK's
// worker sends none, so the server's default lease applies otherwise).
func desiredTTL(ttl time.Duration) option.Middleware {
	secs := fmt.Sprint(int64(ttl / time.Second))
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		if strings.HasSuffix(req.URL.Path, "/heartbeat") && req.URL.Query().Get("desired_ttl_seconds") == "" {
			q := req.URL.Query()
			q.Set("desired_ttl_seconds", secs)
			req.URL.RawQuery = q.Encode()
		}
		return next(req)
	}
}
