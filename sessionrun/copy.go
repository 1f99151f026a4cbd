package sessionrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// CopyMounter mounts by copying: it downloads the store into the directory,
// then the sync engine (syncer) keeps both in sync while the command runs
// and flushes when it stops. Its copy state lives in MountSpec.StateDir.
type CopyMounter struct {
	// OnPass, if set, sees every pass of every store after the download
	// (to report progress); it is called from the mount's goroutine.
	OnPass func(store trove.SessionStore, r *syncer.Report, err error)
}

// Live is false: writes reach the store at the next sync pass.
func (CopyMounter) Live() bool { return false }

// Mount downloads spec.Store into spec.Dir (created if needed) and returns
// the engine that will keep it in sync. A download that fails for any file
// fails the mount.
func (c CopyMounter) Mount(ctx context.Context, s MountSpec) (Mount, error) {
	m := &copyMount{spec: s}
	eng, err := syncer.New(syncer.Options{
		Services: s.Services, StoreID: s.Store.StoreID, Dir: s.Dir, StateDir: s.StateDir,
		ReadOnly: s.Store.Access == trove.AccessReadOnly, SessionID: s.SessionID,
		Interval: s.Interval, Logger: s.logger().With("mount", s.Dir),
		OnPass: func(r *syncer.Report, err error) {
			m.record(r, err)
			s.Notices.Pass(s.Store.Name, r)
			if c.OnPass != nil {
				c.OnPass(s.Store, r, err)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	rep, err := eng.Sync(ctx)
	if err != nil {
		eng.Close()
		return nil, fmt.Errorf("downloading store %q into %s: %w", s.Store.Name, s.Dir, err)
	}
	if len(rep.Errors) > 0 {
		eng.Close()
		return nil, fmt.Errorf("downloading store %q into %s: %s: %s", s.Store.Name, s.Dir, rep.Errors[0].Path, rep.Errors[0].Reason)
	}
	m.eng = eng
	return m, nil
}

type copyMount struct {
	spec MountSpec
	eng  *syncer.Engine

	mu   sync.Mutex
	last *syncer.Report // the last pass's report
}

func (m *copyMount) record(r *syncer.Report, _ error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = r
}

// Run syncs until ctx is done, then flushes. Beyond the flush's own error,
// it fails when the last pass left anything only on disk: per-path
// failures, files the store refuses, entries it cannot hold, deletes that
// did not reach it, or bytes in the state's quarantine (local changes to a
// read-only store).
func (m *copyMount) Run(ctx context.Context) error {
	err := m.eng.Run(ctx)
	if err == nil {
		err = m.unflushed()
	}
	if err != nil {
		return fmt.Errorf("%w; resume with: trove sync --store %s --dir %s --state %s --once",
			err, m.spec.Store.StoreID, m.spec.Dir, m.spec.StateDir)
	}
	return nil
}

func (m *copyMount) Close() error { return m.eng.Close() }

// unflushed describes what the last pass left only on disk, or nil.
func (m *copyMount) unflushed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.last
	if r == nil {
		return errors.New("no final sync pass ran")
	}
	var left []string
	for _, p := range r.Errors {
		left = append(left, p.Path+": "+p.Reason)
	}
	for _, p := range r.Refused {
		left = append(left, p.Path+": "+p.Reason)
	}
	for _, p := range r.Skipped {
		left = append(left, p.Path+": "+p.Reason)
	}
	for _, p := range r.PendingDeletes {
		left = append(left, p+": deleted locally, still in the store")
	}
	if r.Wiped {
		left = append(left, "the directory was emptied; the store was left as it is")
	}
	// The quarantine is read from the disk rather than from the reports:
	// a pass that ends with the context reports nothing, and the bytes are
	// there whatever reported them (or a session before this one).
	for _, q := range quarantined(m.spec.StateDir) {
		left = append(left, "local bytes saved at "+q)
	}
	if len(left) == 0 {
		return nil
	}
	const show = 5
	more := ""
	if len(left) > show {
		more = fmt.Sprintf(" (and %d more)", len(left)-show)
		left = left[:show]
	}
	return fmt.Errorf("not everything reached the store: %s%s", strings.Join(left, "; "), more)
}

// quarantined lists the files in stateDir's quarantine.
func quarantined(stateDir string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(stateDir, syncer.QuarantineDir), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}
