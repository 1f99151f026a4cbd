package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/sessionrun"
	"github.com/trovehq/trove/vfs"
)

func newMountCmd(e *env) *cobra.Command {
	var (
		sf storeFlags
		o  mountOpts
	)
	cmd := &cobra.Command{
		Use:   "mount --store NAME_OR_ID[:ro] [--store …] DIR",
		Short: "Mount memory stores as a live filesystem (FUSE)",
		Long: `mount creates a session with the given stores attached (":ro" for
read-only) and mounts them at DIR (created when missing), one directory per store named by the slug
of its name (DIR/<slug>). DIR itself is read-only.

A file is a memory. Writes are buffered and each close (or fsync) of a
changed file becomes one version attributed to the session. Files over the
content limit fail with EFBIG, bytes that are not UTF-8 with EILSEQ, and any
write in a read-only store with EROFS. When another writer changed a file
since it was opened, close fails with ESTALE and the written bytes are saved
next to it as <stem>.conflict-<id8>-<UTC time><ext>. Other writers' changes
appear within --refresh.

When every store is ":ro", the whole mount is read-only (mounted "ro": any
write fails with EROFS) and the kernel opens its files without asking trove,
serving a file read before from its page cache until the store changes it:
the cheapest reads a mount can give. A change reaches the mount through the
server's change feed (or, without one, within about twice --refresh); a
descriptor open across a change reads the new content, and one whose file
went away or moved fails (ENOENT or ESTALE).

The store is on the server or database every client command uses (see
trove status): --url or --data, TROVE_URL or TROVE_DATA, or trove login.
Runs until SIGINT/SIGTERM, then unmounts and ends the session. Needs FUSE:
/dev/fuse on Linux (root, or fusermount3 for other users), macFUSE on macOS;
where there is none (Windows), trove sync keeps a directory in sync with a
store instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(o.refs) == 0 {
				return &exitError{code: exitUsage, err: errors.New("mount: give at least one --store")}
			}
			if o.refresh <= 0 {
				return &exitError{code: exitUsage, err: errors.New("mount: --refresh must be positive")}
			}
			if why := fuseAvailable(); why != "" {
				return fmt.Errorf("mount: FUSE is unavailable here (%s); use trove sync --store NAME --dir %s to keep a directory in sync with a store instead", why, args[0])
			}
			o.dir = args[0]
			return runMount(e, cmd, &sf, o)
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringArrayVar(&o.refs, "store", nil, "store name or ID to mount, :ro for read-only (repeatable)")
	f.DurationVar(&o.refresh, "refresh", vfs.DefaultRefresh, "longest time before other writers' changes appear when the server offers no change feed (with one they appear at once)")
	f.BoolVar(&o.allowOther, "allow-other", false, "let other users use the mount (needs user_allow_other in /etc/fuse.conf unless root)")
	f.BoolVar(&o.debug, "debug", false, "log every FUSE request")
	return cmd
}

// fuseAvailable is sessionrun.FUSEAvailable; tests replace it to stand for
// a machine without FUSE.
var fuseAvailable = sessionrun.FUSEAvailable

// mountOpts are mount's flags.
type mountOpts struct {
	refs              []string
	dir               string
	refresh           time.Duration
	allowOther, debug bool
}

func runMount(e *env, cmd *cobra.Command, sf *storeFlags, o mountOpts) error {
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	// A missing mount point is created, as sync --dir and tool --root do.
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return &exitError{code: exitUsage, err: fmt.Errorf("mount: %s is not a directory", dir)}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("mount: cannot create the mount point %s: %v", dir, err)}
	}
	sess, closeSvc, err := startSession(e, cmd, sf, "mount", o.refs, nil)
	if err != nil {
		return err
	}
	defer closeSvc()
	defer sess.endOrReport(e.ctx, e.stderr)
	// Everything the mount does acts with the session's own credential,
	// until the last upload after the signal.
	endCtx := context.WithoutCancel(sess.Ctx)
	m, err := sessionrun.MountLive(endCtx, dir, sessionrun.LiveConfig{
		Services: sess.Services, Principal: sess.Principal, Stores: sess.Stores,
		Refresh: o.refresh, AllowOther: o.allowOther, Debug: o.debug, Logger: cliLogger(e.stderr, o.debug),
		OnRefused: func(ss trove.SessionStore, path, reason string) {
			fmt.Fprintf(e.stderr, "trove: [%s] %s is not saved to the store: %s\n", ss.Name, path, reason)
		},
	})
	if err != nil {
		return err
	}
	for _, ss := range sess.Stores {
		mode := "read_write"
		if ss.Access == trove.AccessReadOnly {
			mode = "read_only"
		}
		fmt.Fprintf(e.stdout, "%s\t%s\t%s\n", filepath.Join(dir, sessionrun.DirName(ss)), ss.StoreID, mode)
	}
	fmt.Fprintf(e.stderr, "trove: session %s: %d store(s) mounted at %s; SIGINT/SIGTERM unmounts\n", sess.ID, len(sess.Stores), dir)

	<-sess.Ctx.Done()
	const wait = 10 * time.Second
	if err := m.Unmount(wait, func() { fmt.Fprintf(e.stderr, "trove: %s is busy; retrying for %v\n", dir, wait) }); err != nil {
		return fmt.Errorf("mount: %w (close the files and shells using it, then run fusermount3 -u %s)", err, dir)
	}
	fmt.Fprintf(e.stderr, "trove: unmounted %s\n", dir)
	// Temporary files never renamed are uploaded now, not lost.
	return m.Close(endCtx)
}
