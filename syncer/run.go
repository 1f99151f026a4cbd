package syncer

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Run syncs until ctx is done: one pass at once, then a pass after file
// system activity has been quiet for Debounce (fsnotify, every subdirectory
// watched), and at least every Interval (a negative Interval disables the
// timer). When ctx ends it runs a final pass (Flush: the delete grace period
// is waived) bounded by FinalTimeout, with ctx's values (the principal), and
// returns that pass's error. OnPass sees every pass.
func (e *Engine) Run(ctx context.Context) error {
	var (
		events <-chan fsnotify.Event
		errs   <-chan error
		w      *fsnotify.Watcher
	)
	if !e.o.NoWatch {
		var err error
		w, err = fsnotify.NewWatcher()
		if err != nil {
			e.log.Warn("file watching unavailable; syncing on the interval only", "err", err)
		} else {
			defer w.Close()
			watchTree(w, e.o.Dir)
			events, errs = w.Events, w.Errors
		}
	}
	var tick <-chan time.Time
	if e.o.Interval > 0 {
		t := time.NewTicker(e.o.Interval)
		defer t.Stop()
		tick = t.C
	}
	pass := func() {
		rep, err := e.Sync(ctx)
		if w != nil {
			watchTree(w, e.o.Dir) // directories created by the pass or missed events
		}
		if err != nil && ctx.Err() == nil {
			e.log.Warn("sync pass failed", "err", err)
		}
		if e.o.OnPass != nil && ctx.Err() == nil {
			e.o.OnPass(rep, err)
		}
	}
	pass()
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if isTempName(filepath.Base(ev.Name)) {
				continue
			}
			if ev.Op&fsnotify.Create != 0 {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					watchTree(w, ev.Name)
				}
			}
			debounce.Reset(e.o.Debounce)
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			e.log.Warn("file watching error", "err", err)
		case <-debounce.C:
			pass()
		case <-tick:
			pass()
		}
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.FinalTimeout)
	defer cancel()
	rep, err := e.Flush(fctx)
	if err != nil {
		e.log.Warn("final sync pass failed; unsynced local changes stay on disk and are pushed by the next run with the same state directory", "err", err)
	}
	if e.o.OnPass != nil {
		e.o.OnPass(rep, err)
	}
	return err
}

// watchTree adds dir and every directory below it to w (fsnotify is not
// recursive). Adding an already watched directory is a no-op.
func watchTree(w *fsnotify.Watcher, dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			w.Add(p)
		}
		return nil
	})
}
