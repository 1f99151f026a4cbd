package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
)

func init() { register(newServeCmd) }

// envOr returns the environment variable name, or def when it is unset.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newServeCmd(e *env) *cobra.Command {
	var data, addr, dbURL string
	var shutdownTimeout, authCache time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the memory stores API (wire compatible with the Anthropic SDKs)",
		Long: `Serve the memory stores API over HTTP. Point an official Anthropic SDK at it
by changing its base URL. The first serve on an empty database creates an API
key in workspace ` + defaultWorkspace + `, prints it once and saves it to <data>/api_key.

Data lives in SQLite at <data>/trove.db unless --database names a PostgreSQL URL.

Credentials: a verified API key or session token is remembered for
--auth-cache (default ` + defaultAuthCache.String() + `), so a hot client costs no database read per
request for it. A key revoked or a session ended through this server is
refused at once. A key revoked by another process (trove keys revoke, or
another trove serve on the same PostgreSQL) is refused by this server at most
--auth-cache later. --auth-cache 0 checks the database on every request.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(e, data, addr, dbURL, shutdownTimeout, authCache)
		},
	}
	f := cmd.Flags()
	f.StringVar(&data, "data", defaultDataDir(), "data directory (env TROVE_DATA)")
	f.StringVar(&addr, "addr", envOr("TROVE_ADDR", "127.0.0.1:7007"), "listen address host:port (env TROVE_ADDR)")
	f.StringVar(&dbURL, "database", os.Getenv("TROVE_DATABASE"), "PostgreSQL URL; empty for SQLite in --data (env TROVE_DATABASE)")
	f.DurationVar(&authCache, "auth-cache", defaultAuthCache, "remember a verified credential this long: one revoked by another process (trove keys revoke) keeps working here up to this long, one revoked through this server stops at once; 0 checks every request")
	f.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight requests may take to finish on SIGINT/SIGTERM")
	return cmd
}

// defaultAuthCache is serve's --auth-cache: short enough that a revocation
// made by another process is honoured within two seconds.
const defaultAuthCache = 2 * time.Second

func runServe(e *env, data, addr, dbURL string, shutdownTimeout, authCache time.Duration) error {
	ctx := e.ctx
	if authCache < 0 {
		return fmt.Errorf("--auth-cache must not be negative, got %s", authCache)
	}
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	b, err := openBackendWith(ctx, data, dbURL, true, core.Options{Logger: log, AuthCacheTTL: authCache})
	if err != nil {
		return err
	}
	defer b.close()

	if err := ensureFirstKey(ctx, e, b, data); err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	handler := httpapi.NewServer(httpapi.Config{
		Services: b.svc,
		Sessions: b.svc,
		Auth:     b.svc,
		Limits:   b.svc.Limits(),
		Logger:   log,
		Metrics:  reg,
		Health:   b.health,
		// The credential cache is core's (Options.AuthCacheTTL): it sees
		// revocations made through this process at once.
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(e.stdout, "trove: listening on %s (%s %s)\n", url, b.kind, b.where)
	log.Info("listening on "+url, "database", b.kind, "where", b.where)

	retCtx, stopRetention := context.WithCancel(context.Background())
	retDone := make(chan struct{})
	go func() {
		defer close(retDone)
		_ = b.svc.RunRetention(retCtx, time.Hour)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		stopRetention()
		<-retDone
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down: waiting for in-flight requests", "timeout", shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	stopRetention()
	<-retDone
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	fmt.Fprintln(e.stdout, "trove: stopped")
	return nil
}

// ensureFirstKey creates an API key in the default workspace when the
// database has none, prints it once and saves it to <data>/api_key (0600).
func ensureFirstKey(ctx context.Context, e *env, b *backend, data string) error {
	keys, err := b.svc.ListKeys(ctx, "")
	if err != nil {
		return fmt.Errorf("listing API keys: %w", err)
	}
	if len(keys) > 0 {
		return nil
	}
	k, secret, err := b.svc.CreateKey(ctx, defaultWorkspace, "default")
	if err != nil {
		return fmt.Errorf("creating the first API key: %w", err)
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return fmt.Errorf("creating the data directory: %w", err)
	}
	path := filepath.Join(data, "api_key")
	if err := writeFileAtomic(path, []byte(secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("saving the API key: %w", err)
	}
	fmt.Fprintf(e.stdout, "trove: created API key %s in workspace %s (saved to %s; shown once):\n%s\n", k.ID, k.WorkspaceID, path, secret)
	return nil
}
