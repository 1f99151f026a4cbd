package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/vfs"
)

func init() { register(newMountCmd) }

func newMountCmd(e *env) *cobra.Command {
	var (
		sf         storeFlags
		refs       []string
		refresh    time.Duration
		allowOther bool
		debug      bool
	)
	cmd := &cobra.Command{
		Use:   "mount --store NAME_OR_ID[:ro] [--store …] DIR",
		Short: "Mount memory stores as a live filesystem (FUSE)",
		Long: `mount creates a session with the given stores attached (":ro" for
read-only) and mounts them at DIR, one directory per store named by the slug
of its name (DIR/<slug>). DIR itself is read-only.

A file is a memory. Writes are buffered and each close (or fsync) of a
changed file becomes one version attributed to the session. Files over the
content limit fail with EFBIG, bytes that are not UTF-8 with EILSEQ, and any
write in a read-only store with EROFS. When another writer changed a file
since it was opened, close fails with ESTALE and the written bytes are saved
next to it as <stem>.conflict-<id8>-<UTC time><ext>. Other writers' changes
appear within --refresh.

The store is local (--data, TROVE_DATA) or on a server (TROVE_URL with
TROVE_API_KEY). Runs until SIGINT/SIGTERM, then unmounts and ends the
session. Needs /dev/fuse (root, or fusermount3 for other users).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(refs) == 0 {
				return &exitError{code: 2, err: errors.New("mount: give at least one --store")}
			}
			if refresh <= 0 {
				return &exitError{code: 2, err: errors.New("mount: --refresh must be positive")}
			}
			return runMount(e, cmd, &sf, refs, args[0], refresh, allowOther, debug)
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&refs, "store", nil, "store name or ID to mount, :ro for read-only (repeatable)")
	f.DurationVar(&refresh, "refresh", vfs.DefaultRefresh, "longest time before other writers' changes appear")
	f.BoolVar(&allowOther, "allow-other", false, "let other users use the mount (needs user_allow_other in /etc/fuse.conf unless root)")
	f.BoolVar(&debug, "debug", false, "log every FUSE request")
	return cmd
}

func runMount(e *env, cmd *cobra.Command, sf *storeFlags, refs []string, dir string, refresh time.Duration, allowOther, debug bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return &exitError{code: 2, err: fmt.Errorf("mount: %s is not a directory", dir)}
	}
	sess, end, err := startSession(e, cmd, sf, "mount", refs, nil)
	if err != nil {
		return err
	}
	defer end()
	// Everything the mount does acts with the session's own credential,
	// until the last upload after the signal.
	endCtx := context.WithoutCancel(sess.Ctx)
	names := map[string]string{}
	cfg := vfs.Config{Services: sess.Services, Principal: sess.Principal, Refresh: refresh, Logger: cliLogger(e.stderr, debug),
		OnRefused: func(storeID, path, reason string) {
			fmt.Fprintf(e.stderr, "trove: [%s] %s is not saved to the store: %s\n", names[storeID], path, reason)
		},
	}
	for _, ss := range sess.Stores {
		cfg.Stores = append(cfg.Stores, vfsStore(ss))
		names[ss.StoreID] = ss.Name
	}
	v, err := vfs.New(endCtx, cfg)
	if err != nil {
		return err
	}
	srv, err := fusefs.Mount(dir, v, fusefs.Options{AllowOther: allowOther, Debug: debug, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	for _, sc := range cfg.Stores {
		mode := "read_write"
		if sc.ReadOnly {
			mode = "read_only"
		}
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", filepath.Join(dir, sc.Name), sc.StoreID, mode)
	}
	fmt.Fprintf(e.stderr, "trove: session %s: %d store(s) mounted at %s; SIGINT/SIGTERM unmounts\n", sess.ID, len(cfg.Stores), dir)

	<-sess.Ctx.Done()
	const wait = 10 * time.Second
	if err := unmountRetry(srv, wait, func() { fmt.Fprintf(e.stderr, "trove: %s is busy; retrying for %v\n", dir, wait) }); err != nil {
		return fmt.Errorf("mount: %w (close the files and shells using it, then run fusermount3 -u %s)", err, dir)
	}
	fmt.Fprintf(e.stderr, "trove: unmounted %s\n", dir)
	// Temporary files never renamed are uploaded now, not lost.
	return v.Close(endCtx)
}

// unmountRetry unmounts srv, retrying while the mount is busy (a shell may
// still sit in it) for at most wait. busy, if not nil, is called once, at
// the first retry.
func unmountRetry(srv *fusefs.Server, wait time.Duration, busy func()) error {
	deadline := time.Now().Add(wait)
	for i := 0; ; i++ {
		err := srv.Unmount()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if i == 0 && busy != nil {
			busy()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// vfsStore is the vfs configuration of an attached store: its directory is
// the last element of its mount path.
func vfsStore(ss trove.SessionStore) vfs.StoreConfig {
	return vfs.StoreConfig{StoreID: ss.StoreID, Name: path.Base(ss.MountPath), ReadOnly: ss.Access == trove.AccessReadOnly}
}

// fuseMounter mounts one attached store at its directory with FUSE: the
// live alternative to copyMounter behind session run's mounter seam (use it
// when fuseAvailable returns ""). Writes reach the store at each close, so
// Run has nothing to flush but the temporary files never renamed.
type fuseMounter struct {
	// Refresh bounds how stale listings may get (vfs.DefaultRefresh if 0).
	Refresh time.Duration
}

// fuseAvailable returns why FUSE mounts cannot work on this machine, or "".
func fuseAvailable() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse"
	}
	if os.Getuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return "not root and no fusermount3 in PATH"
		}
	}
	return ""
}

type fuseMount struct {
	v    *vfs.FS
	srv  *fusefs.Server
	ctx  context.Context // principal for the final uploads
	log  *slog.Logger
	once sync.Once
	err  error
}

// Mount mounts spec.Store at spec.Dir (created if needed) with spec's
// session services; ctx carries the session principal for a local backend.
func (m fuseMounter) Mount(ctx context.Context, spec mountSpec) (mount, error) {
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, err
	}
	p := trove.PrincipalFrom(ctx)
	if p == nil { // remote: the client carries the token; this names conflict copies
		p = &trove.Principal{Actor: trove.Actor{Type: trove.ActorSession, SessionID: spec.SessionID}}
	}
	log := spec.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	root, name := filepath.Dir(spec.Dir), spec.Store.Name
	v, err := vfs.New(ctx, vfs.Config{
		Services: spec.Services, Principal: p, Flat: true, Refresh: m.Refresh, Logger: log,
		Stores: []vfs.StoreConfig{vfsStore(spec.Store)},
		// The agent's shell may ignore the error of close: tell it in the
		// notices file too, as the copy engine does for its refusals.
		OnRefused: func(_, path, reason string) { appendRefusal(root, name, path, reason) },
		OnHidden: func(_, path, reason string) {
			appendNoticeText(root, fmt.Sprintf("- [%s] %s is in the store but not shown here: %s\n", name, path, reason))
		},
	})
	if err != nil {
		return nil, err
	}
	srv, err := fusefs.Mount(spec.Dir, v, fusefs.Options{Logger: log})
	if err != nil {
		return nil, err
	}
	return &fuseMount{v: v, srv: srv, ctx: trove.WithPrincipal(context.WithoutCancel(ctx), p), log: log}, nil
}

// Run waits for ctx, then unmounts (retrying while busy, for 10 s) and
// uploads the temporary files never renamed.
func (m *fuseMount) Run(ctx context.Context) error {
	<-ctx.Done()
	return m.stop()
}

// Close unmounts if Run did not.
func (m *fuseMount) Close() error { return m.stop() }

func (m *fuseMount) stop() error {
	m.once.Do(func() {
		if m.err = unmountRetry(m.srv, 10*time.Second, nil); m.err != nil {
			m.log.Error("trove: unmount failed", "dir", m.srv.Dir(), "err", m.err)
			return
		}
		m.err = m.v.Close(m.ctx)
	})
	return m.err
}
