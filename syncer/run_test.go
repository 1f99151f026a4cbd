package syncer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove/syncer"
)

// TestRunWatchesAndFlushes: Run syncs a new file (in a new subdirectory)
// after an fsnotify event, with the interval timer out of the way, and its
// final pass on stop pushes a deletion without waiting for the grace period.
func TestRunWatchesAndFlushes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.rwrite("/keep.md", "k")
	e.rwrite("/gone.md", "g")
	passes := make(chan *syncer.Report, 100)
	en := e.engine("dir", func(o *syncer.Options) {
		o.Interval = time.Hour
		o.Debounce = 20 * time.Millisecond
		o.OnPass = func(r *syncer.Report, err error) {
			if err != nil {
				t.Errorf("pass: %v", err)
			}
			passes <- r
		}
	})
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- en.Run(ctx) }()
	wait := func(what string, ok func(*syncer.Report) bool) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		for {
			select {
			case r := <-passes:
				if ok(r) {
					return
				}
			case <-timeout:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	wait("the initial download", func(r *syncer.Report) bool { return r.Counts[syncer.KindDownload] == 2 })

	writeFile(t, en.Dir(), "/sub/deeper/new.md", "N")
	wait("the watched create", func(r *syncer.Report) bool { return r.Counts[syncer.KindCreate] == 1 })
	writeFile(t, en.Dir(), "/sub/deeper/new.md", "N2")
	wait("the watched edit in a new subdirectory", func(r *syncer.Report) bool { return r.Counts[syncer.KindUpload] == 1 })

	removeFile(t, en.Dir(), "/gone.md")
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	want := map[string]string{"/keep.md": "k", "/sub/deeper/new.md": "N2"}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store after stop (-want +got):\n%s", diff)
	}
}
