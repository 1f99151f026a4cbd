package syncer

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storetree"
)

// Run syncs until ctx is done: one pass at once, then a pass after file
// system activity has been quiet for Debounce (fsnotify, every subdirectory
// watched), a pass as soon as the store changes when Services offers the
// change feed (trove.ChangeService, followed from the store's head when
// Run starts, so no change after that is missed), and every Interval
// while the feed or the file watching is not working (a negative Interval
// disables the timer). When ctx ends it runs a final pass (Flush: the delete grace period
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
	remote, feedUp := e.followFeed(ctx)
	pass := func() {
		rep, err := e.Sync(ctx)
		if w != nil {
			watchTree(w, e.o.Dir) // directories created by the pass or missed events
		}
		if err != nil && ctx.Err() == nil {
			e.log.Warn("sync pass failed", "err", err)
		}
		switch {
		case e.o.OnPass == nil:
		case ctx.Err() == nil:
			e.o.OnPass(rep, err)
		case rep != nil:
			// Cancelled while the pass ran: what it did (a read-only
			// file restored, a conflict copy made) still happened and is
			// reported; its error is the cancellation's. Dropping the
			// report lost such a pass's notices, since the final flush
			// then finds nothing left to do.
			e.o.OnPass(rep, nil)
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
		case <-remote:
			pass()
		case <-tick:
			// With the feed live and files watched, every change already
			// triggers a pass; the interval is the fallback.
			if !feedUp.Load() || w == nil {
				pass()
			}
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

// followFeed follows the store's change feed, when Services offers one and
// NoFeed is not set, until ctx ends: remote receives a value (coalesced)
// after each change, up says whether the feed is live. A store's own
// history is read from its head at the call; a feed that is unavailable
// or refuses leaves Run on the interval.
func (e *Engine) followFeed(ctx context.Context) (remote <-chan struct{}, up *atomic.Bool) {
	ch := make(chan struct{}, 1)
	up = new(atomic.Bool)
	cs, ok := e.o.Services.(trove.ChangeService)
	if !ok || e.o.NoFeed {
		return ch, up
	}
	head, err := storetree.FeedHead(ctx, cs, e.o.StoreID)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Info("change feed unavailable; pulling remote changes every interval", "err", err)
		}
		return ch, up
	}
	go func() {
		err := storetree.Follow(ctx, cs, e.o.StoreID, head, func(trove.Change) error {
			select {
			case ch <- struct{}{}:
			default: // a pass is already due
			}
			return nil
		}, up.Store)
		up.Store(false)
		if ctx.Err() == nil {
			e.log.Warn("change feed ended; pulling remote changes every interval", "err", err)
		}
	}()
	return ch, up
}
