package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/mcpserver"
)

// resolveStores resolves each store ref for writing (see resolveStore) and
// gives each a distinct mount name from the slug of its name. A store given
// twice is EINVALID.
func resolveStores(ctx context.Context, svc trove.Services, refs []string) ([]trove.Store, []string, error) {
	var stores []trove.Store
	var slugs []string
	seen := map[string]bool{}
	used := map[string]bool{}
	for _, ref := range refs {
		st, err := resolveStore(ctx, svc, ref, writeStore)
		if err != nil {
			return nil, nil, err
		}
		if seen[st.ID] {
			return nil, nil, trove.Errorf(trove.EINVALID, "store %s (%q) is given twice", st.ID, st.Name)
		}
		seen[st.ID] = true
		slug := trove.Slug(st.Name)
		for i := 2; used[slug]; i++ {
			slug = trove.Slug(st.Name) + "-" + strconv.Itoa(i)
		}
		used[slug] = true
		stores = append(stores, *st)
		slugs = append(slugs, slug)
	}
	return stores, slugs, nil
}

func newMCPCmd(e *env) *cobra.Command {
	var sf storeFlags
	var storeRefs []string
	var sessionID string
	var httpAddr string
	cmd := &cobra.Command{
		Use:   "mcp (--store NAME_OR_ID [--store ...] | --session ID) [--http 127.0.0.1:PORT]",
		Short: "Serve the memory tool over memory stores to MCP clients (stdio or streamable HTTP)",
		Long: `Serve an MCP server with two tools over Trove memory stores:

  memory  Claude's memory tool (view, create, str_replace, insert, delete,
          rename under /memories); every write is a version in the store.
  search  read-only search of memory paths and content.

With one --store, /memories is that store; with several, /memories/<slug>/ is
each store (the slug of its name). --session serves a session's stores at
their mount names, acting as the session (its actor, its access). Stores are on the server or database every
client command uses (see trove status): --url (with --api-key) or --data,
TROVE_URL (with TROVE_API_KEY) or TROVE_DATA, or the server saved by trove login.

By default the server speaks MCP over stdin/stdout (what desktop clients
launch); nothing else is written to stdout. With --http it serves streamable
HTTP at http://ADDR/mcp; the endpoint has no authentication of its own, so
ADDR must be a loopback address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(storeRefs) == 0 && sessionID == "" {
				return mcpUsageError("--store is required: name the memory store (by name or memstore_ ID) to serve, or give --session")
			}
			if len(storeRefs) > 0 && sessionID != "" {
				return mcpUsageError("use either --store or --session, not both")
			}
			if httpAddr != "" {
				if err := checkLoopback(httpAddr); err != nil {
					return err
				}
			}
			return runMCP(e, cmd, &sf, storeRefs, sessionID, httpAddr)
		},
	}
	sf.register(cmd)
	cmd.Flags().StringArrayVar(&storeRefs, "store", nil, "memory store to serve, by name or ID; repeat for several stores")
	cmd.Flags().StringVar(&sessionID, "session", "", "serve the stores attached to this session (sesn_…) at /memories/<slug>/, with the session's access")
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio")
	return cmd
}

// checkLoopback accepts host:port with a loopback IP or "localhost".
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return mcpUsageError("--http %q: want host:port, such as 127.0.0.1:8765", addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return mcpUsageError("--http %q: the MCP endpoint has no authentication, so it only listens on a loopback address (127.0.0.1:PORT or [::1]:PORT)", addr)
}

// mcpGCPercent is the garbage collector's GOGC for `trove mcp` when the
// environment sets none. The server's live heap is a few megabytes, while
// every tool call leaves tens of kilobytes of garbage (MCP and API JSON,
// HTTP requests), so at Go's default of 100 it collected often and spent a
// quarter of its CPU time doing so (a CPU profile of BenchmarkMCPEdits);
// at 400 the heap stays small (five times the live heap at most) and the
// benchmark's CPU time per call, trove mcp and trove serve together, fell
// from 1.35-1.39 ms to 1.00-1.14 ms (docs/perf/mcp.md).
const mcpGCPercent = 400

func runMCP(e *env, cmd *cobra.Command, sf *storeFlags, refs []string, sessionID, httpAddr string) error {
	ctx := e.ctx
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(mcpGCPercent))
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, names, closeSvc, err := openMCPServer(e, cmd, sf, refs, sessionID, mcpserver.Options{Logger: log, Version: Version()})
	if err != nil {
		return err
	}
	defer closeSvc()
	if httpAddr == "" {
		err := srv.MCP().Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
		if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
			return nil // the client went away, or we were told to stop
		}
		return err
	}
	ln, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", httpAddr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.HTTPHandler())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "trove mcp: serving %s over streamable HTTP at http://%s/mcp\n", strings.Join(names, ", "), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down: %w", err)
	}
	return nil
}

// openMCPServer opens the target sf names and returns a server over the
// stores refs name (or the session's stores), the "name (ID)" of each, and
// the function that closes the target. opt's Principal and Mounted are set
// here: the local key's principal (or the session's, for --session on a
// local database) and whether the stores are laid out as a session's.
func openMCPServer(e *env, cmd *cobra.Command, sf *storeFlags, refs []string, sessionID string, opt mcpserver.Options) (*mcpserver.Server, []string, func() error, error) {
	k, err := openConn(e.ctx, cmd, sf)
	if err != nil {
		return nil, nil, nil, err
	}
	svc, p, lookupCtx, closeSvc := k.svc, k.p, k.ctx, k.close
	var mounts []mcpserver.Mount
	var names []string
	if sessionID != "" {
		if mounts, names, p, err = sessionMounts(lookupCtx, svc, p, sessionID); err != nil {
			closeSvc()
			return nil, nil, nil, err
		}
	} else {
		stores, slugs, err := resolveStores(lookupCtx, svc, refs)
		if err != nil {
			closeSvc()
			return nil, nil, nil, err // Main renders it for people and names the target
		}
		for i, st := range stores {
			mounts = append(mounts, mcpserver.Mount{StoreID: st.ID, Slug: slugs[i]})
			names = append(names, fmt.Sprintf("%s (%s)", st.Name, st.ID))
		}
	}
	opt.Principal, opt.Mounted = p, sessionID != ""
	srv, err := mcpserver.New(svc, mounts, opt)
	if err != nil {
		closeSvc()
		return nil, nil, nil, err
	}
	return srv, names, closeSvc, nil
}

// sessionMounts returns the stores attached to sessionID as mounts named
// after their mount directories, and the principal the writes run as: with
// a local database, the session itself (its actor on every version, its
// read_only/read_write access enforced by the store); with a server, the
// remote credential (nil).
func sessionMounts(ctx context.Context, svc trove.Services, local *trove.Principal, sessionID string) ([]mcpserver.Mount, []string, *trove.Principal, error) {
	ss, ok := svc.(trove.SessionService)
	if !ok {
		return nil, nil, nil, errors.New("--session needs a backend with sessions")
	}
	sess, err := ss.GetSession(ctx, sessionID)
	if err != nil {
		if code := trove.ErrorCode(err); code == trove.ENOTFOUND || code == trove.EINVALID || code == trove.EFORBIDDEN {
			return nil, nil, nil, fmt.Errorf("session %s: %s", sessionID, trove.ErrorMessage(err))
		}
		return nil, nil, nil, err
	}
	if sess.EndedAt != nil {
		return nil, nil, nil, fmt.Errorf("session %s has ended: its stores can no longer be written through it", sessionID)
	}
	if len(sess.Stores) == 0 {
		return nil, nil, nil, fmt.Errorf("session %s has no stores attached", sessionID)
	}
	var mounts []mcpserver.Mount
	var names []string
	scope := &trove.SessionScope{SessionID: sess.ID, Stores: map[string]trove.Access{}}
	for _, st := range sess.Stores {
		slug := st.MountPath[strings.LastIndexByte(st.MountPath, '/')+1:]
		mounts = append(mounts, mcpserver.Mount{StoreID: st.StoreID, Slug: slug})
		names = append(names, fmt.Sprintf("%s (%s, %s)", st.Name, st.StoreID, st.Access))
		scope.Stores[st.StoreID] = st.Access
	}
	var p *trove.Principal
	if local != nil {
		p = &trove.Principal{
			WorkspaceID: sess.WorkspaceID,
			Actor:       trove.Actor{Type: trove.ActorSession, SessionID: sess.ID},
			Session:     scope,
		}
	}
	return mounts, names, p, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpUsageError is a usage error (exit code 2).
func mcpUsageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}
