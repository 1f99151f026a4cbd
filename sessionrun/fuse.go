package sessionrun

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/fusefs"
	"github.com/trovehq/trove/vfs"
)

// unmountWait is how long a mount that is busy (a shell still sits in it)
// is retried before unmounting fails.
const unmountWait = 10 * time.Second

// LiveConfig configures MountLive.
type LiveConfig struct {
	// Services act with the session's credential.
	Services trove.Services
	// Principal is the session's; it names conflict copies, and is the
	// principal of every call whose context carries none.
	Principal *trove.Principal
	Stores    []trove.SessionStore
	// Flat mounts the one store of Stores at the directory itself;
	// otherwise the directory is read-only and holds one directory per
	// store, named by DirName.
	Flat bool
	// Refresh bounds how stale listings may get (vfs.DefaultRefresh if 0).
	Refresh    time.Duration
	AllowOther bool
	Debug      bool
	Logger     *slog.Logger // nil: discarded
	// OnRefused, if set, is called for every change a store refuses at a
	// close or fsync. It must return quickly and must not use the mount.
	OnRefused func(store trove.SessionStore, path, reason string)
	// OnHidden, if set, is called once per mount for every store path that
	// cannot be shown as a local file (a name over 255 bytes). It must
	// return quickly and must not use the mount.
	OnHidden func(store trove.SessionStore, path, reason string)
}

// LiveMount is stores mounted with FUSE (vfs over fusefs): every close of a
// written file is one version, other writers' changes appear within the
// refresh bound.
type LiveMount struct {
	v   *vfs.FS
	srv *fusefs.Server
}

// MountLive mounts cfg.Stores at dir (an existing empty directory); ctx
// carries the session's principal for local services.
func MountLive(ctx context.Context, dir string, cfg LiveConfig) (*LiveMount, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	byID := map[string]trove.SessionStore{}
	vc := vfs.Config{Services: cfg.Services, Principal: cfg.Principal, Flat: cfg.Flat, Refresh: cfg.Refresh, Logger: log}
	for _, ss := range cfg.Stores {
		vc.Stores = append(vc.Stores, vfs.StoreConfig{StoreID: ss.StoreID, Name: DirName(ss), ReadOnly: ss.Access == trove.AccessReadOnly})
		byID[ss.StoreID] = ss
	}
	if cfg.OnRefused != nil {
		vc.OnRefused = func(storeID, path, reason string) { cfg.OnRefused(byID[storeID], path, reason) }
	}
	if cfg.OnHidden != nil {
		vc.OnHidden = func(storeID, path, reason string) { cfg.OnHidden(byID[storeID], path, reason) }
	}
	v, err := vfs.New(ctx, vc)
	if err != nil {
		return nil, err
	}
	srv, err := fusefs.Mount(dir, v, fusefs.Options{AllowOther: cfg.AllowOther, Debug: cfg.Debug, Logger: log})
	if err != nil {
		return nil, err
	}
	return &LiveMount{v: v, srv: srv}, nil
}

// Dir returns the mount point.
func (m *LiveMount) Dir() string { return m.srv.Dir() }

// Unmount unmounts, retrying while the mount is busy for at most wait.
// busy, if not nil, is called once, at the first retry.
func (m *LiveMount) Unmount(wait time.Duration, busy func()) error {
	deadline := time.Now().Add(wait)
	for i := 0; ; i++ {
		err := m.srv.Unmount()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if i == 0 && busy != nil {
			busy()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Close uploads, as they are, the temporary files never renamed, so that
// nothing written through the mount is lost; call it after Unmount.
func (m *LiveMount) Close(ctx context.Context) error { return m.v.Close(ctx) }

// FUSEMounter mounts one attached store at its directory with FUSE (use it
// when FUSEAvailable returns ""). Writes reach the store at each close, so
// Run has nothing to flush but the temporary files never renamed; a write
// the store refuses fails its close and is noted in MountSpec.Notices.
type FUSEMounter struct {
	// Refresh bounds how stale listings may get (vfs.DefaultRefresh if 0).
	Refresh time.Duration
}

// Live is true: each close of a written file saves it.
func (FUSEMounter) Live() bool { return true }

// Mount mounts spec.Store at spec.Dir (created if needed) with spec's
// session services; ctx carries the session principal for local services.
func (m FUSEMounter) Mount(ctx context.Context, spec MountSpec) (Mount, error) {
	if err := os.MkdirAll(spec.Dir, 0o755); err != nil {
		return nil, err
	}
	p := trove.PrincipalFrom(ctx)
	if p == nil { // remote: the client carries the token; this names conflict copies
		p = &trove.Principal{Actor: trove.Actor{Type: trove.ActorSession, SessionID: spec.SessionID}}
	}
	log := spec.logger()
	lm, err := MountLive(ctx, spec.Dir, LiveConfig{
		Services: spec.Services, Principal: p, Stores: []trove.SessionStore{spec.Store},
		Flat: true, Refresh: m.Refresh, Logger: log,
		// The agent's shell may ignore the error of close: tell it in the
		// notices file too, as the copy engine does for its refusals.
		OnRefused: func(ss trove.SessionStore, path, reason string) { spec.Notices.Refusal(ss.Name, path, reason) },
		OnHidden:  func(ss trove.SessionStore, path, reason string) { spec.Notices.Hidden(ss.Name, path, reason) },
	})
	if err != nil {
		return nil, err
	}
	return &fuseMount{lm: lm, ctx: trove.WithPrincipal(context.WithoutCancel(ctx), p), log: log}, nil
}

type fuseMount struct {
	lm   *LiveMount
	ctx  context.Context // principal for the final uploads
	log  *slog.Logger
	once sync.Once
	err  error
}

// Run waits for ctx, then unmounts (retrying while busy, for 10 s) and
// uploads the temporary files never renamed.
func (m *fuseMount) Run(ctx context.Context) error {
	<-ctx.Done()
	return m.stop()
}

// Close unmounts if Run did not; it returns the same error as Run.
func (m *fuseMount) Close() error { return m.stop() }

func (m *fuseMount) stop() error {
	m.once.Do(func() {
		if m.err = m.lm.Unmount(unmountWait, nil); m.err != nil {
			m.log.Error("trove: unmount failed", "dir", m.lm.Dir(), "err", m.err)
			return
		}
		m.err = m.lm.Close(m.ctx)
	})
	return m.err
}
