package memtool

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// ErrNoAccessTimes is returned by Sweep when the FS does not implement
// Toucher.
var ErrNoAccessTimes = errors.New("memtool: the storage does not track access times")

// Sweep deletes every file that has not been accessed (viewed, created or
// edited through a Tool) for longer than olderThan, as measured by
// Options.Now, and then removes the directories it emptied (never the
// root). Files with an unknown access time are kept. Hidden files are swept
// too. Each deletion re-checks the access time under the file's lock, so a
// file used concurrently survives. It returns the virtual paths deleted, in
// walk order, and the first error that stopped the sweep.
func (t *Tool) Sweep(ctx context.Context, olderThan time.Duration) ([]string, error) {
	if _, ok := t.fs.(Toucher); !ok {
		return nil, ErrNoAccessTimes
	}
	cutoff := t.opt.Now().Add(-olderThan)
	expired := func(i Info) bool { return i.Kind == KindFile && !i.Accessed.IsZero() && i.Accessed.Before(cutoff) }

	var candidates []string
	var walk func(rel string) error
	walk = func(rel string) error {
		entries, err := t.fs.ReadDir(ctx, rel)
		if err != nil {
			return err
		}
		for _, e := range entries {
			child := e.Name
			if rel != "" {
				child = rel + "/" + e.Name
			}
			switch {
			case e.Kind == KindDir:
				if err := walk(child); err != nil && !errors.Is(err, ErrNotExist) {
					return err
				}
			case expired(e):
				candidates = append(candidates, child)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	var deleted []string
	parents := map[string]bool{}
	for _, name := range candidates {
		ok, err := t.sweepOne(ctx, name, expired)
		if err != nil {
			return deleted, err
		}
		if ok {
			deleted = append(deleted, RootPath+"/"+name)
			for d := parentOf(name); d != ""; d = parentOf(d) {
				parents[d] = true
			}
		}
	}
	// Deepest first, so that a directory emptied by removing its
	// emptied subdirectories goes too.
	dirs := make([]string, 0, len(parents))
	for d := range parents {
		dirs = append(dirs, d)
	}
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range dirs {
		if err := t.removeIfEmpty(ctx, d); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

func (t *Tool) sweepOne(ctx context.Context, name string, expired func(Info) bool) (bool, error) {
	unlock, err := t.locks.lock(ctx, true, name)
	if err != nil {
		return false, err
	}
	defer unlock()
	info, err := t.fs.Stat(ctx, name)
	if errors.Is(err, ErrNotExist) || (err == nil && !expired(info)) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := t.fs.Remove(ctx, name); err != nil && !errors.Is(err, ErrNotExist) {
		return false, err
	}
	return true, nil
}

func (t *Tool) removeIfEmpty(ctx context.Context, dir string) error {
	unlock, err := t.locks.lock(ctx, true, dir)
	if err != nil {
		return err
	}
	defer unlock()
	entries, err := t.fs.ReadDir(ctx, dir)
	if errors.Is(err, ErrNotExist) || (err == nil && len(entries) > 0) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := t.fs.Remove(ctx, dir); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	return nil
}

func parentOf(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}
