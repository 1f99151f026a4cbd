package syncer_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/syncer"
)

// feedRun is an engine running Run with the interval out of the way (an
// hour), over local core or over HTTP, and the reports of its passes.
type feedRun struct {
	en     *syncer.Engine
	passes chan *syncer.Report
	stop   func()
}

func startFeedRun(t testing.TB, e *env, name, over string, noFeed bool) *feedRun {
	t.Helper()
	var svc trove.Services = e.svc
	if over == "http" {
		srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: e.svc, Sessions: e.svc, Auth: e.svc}))
		t.Cleanup(srv.Close)
		_, key, err := e.svc.CreateKey(context.Background(), "wrkspc_test", "feed")
		if err != nil {
			t.Fatal(err)
		}
		svc = httpapi.NewClient(srv.URL, key)
	}
	r := &feedRun{passes: make(chan *syncer.Report, 1000)}
	r.en = e.engine(name, func(o *syncer.Options) {
		o.Services = svc
		o.Interval = time.Hour
		o.Debounce = 20 * time.Millisecond
		o.NoFeed = noFeed
		o.OnPass = func(rep *syncer.Report, err error) {
			if err != nil {
				t.Errorf("pass: %v", err)
			}
			r.passes <- rep
		}
	})
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- r.en.Run(ctx) }()
	r.stop = func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(r.stop)
	return r
}

// waitFile waits, pass by pass, until p in the engine's directory holds
// want, and returns when that pass ended.
func (r *feedRun) waitFile(t testing.TB, p, want string, deadline time.Duration) time.Time {
	t.Helper()
	timeout := time.After(deadline)
	for {
		if b, err := os.ReadFile(filepath.Join(r.en.Dir(), filepath.FromSlash(p))); err == nil && string(b) == want {
			return time.Now()
		}
		select {
		case <-r.passes:
		case <-timeout:
			t.Fatalf("%s did not become %q within %v", p, want, deadline)
		}
	}
}

// waitQuiet waits for a pass that changed nothing: the pass that the
// file events of the engine's own downloads trigger. After it, nothing but
// the feed (or the hour-long interval) starts another pass.
func (r *feedRun) waitQuiet(t testing.TB) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case rep := <-r.passes:
			if len(rep.Counts) == 0 {
				return
			}
		case <-timeout:
			t.Fatal("no quiet pass within 20 s")
		}
	}
}

// TestRunFollowsFeed: with the interval at an hour, a remote edit, create
// and delete reach the synced directory through the change feed, locally
// and over HTTP (server-sent events), within a second.
func TestRunFollowsFeed(t *testing.T) {
	t.Parallel()
	for _, over := range []string{"local", "http"} {
		t.Run(over, func(t *testing.T) {
			e := newEnv(t)
			e.rwrite("/a.md", "v0")
			r := startFeedRun(t, e, "dir", over, false)
			r.waitFile(t, "/a.md", "v0", 20*time.Second)
			r.waitQuiet(t)
			for i := 1; i <= 3; i++ {
				start := time.Now()
				e.rwrite("/a.md", fmt.Sprintf("v%d", i))
				e.rwrite(fmt.Sprintf("/new/n%d.md", i), "n")
				if d := r.waitFile(t, "/a.md", fmt.Sprintf("v%d", i), 20*time.Second).Sub(start); d > time.Second {
					t.Errorf("edit %d reached the file after %v", i, d)
				}
				r.waitFile(t, fmt.Sprintf("/new/n%d.md", i), "n", 20*time.Second)
				r.waitQuiet(t)
			}
			e.rdelete("/new/n1.md")
			timeout := time.After(20 * time.Second)
			for {
				if _, err := os.Stat(filepath.Join(r.en.Dir(), "new", "n1.md")); errors.Is(err, os.ErrNotExist) {
					break
				}
				select {
				case <-r.passes:
				case <-timeout:
					t.Fatal("the remote delete did not reach the directory")
				}
			}
		})
	}
}

// BenchmarkRemoteEditLatency: time from a remote edit (committed through
// core) to the end of the pass that wrote it to the synced file, with Run
// following the change feed (local core; HTTP with server-sent events),
// against the same-run floor: the edit followed at once by a direct Sync
// call (what an ideal trigger costs). The interval (15 s default) is out
// of the way. Reports the median and the maximum per edit.
//
//	go test -run '^$' -bench RemoteEditLatency -benchtime 50x ./syncer
func BenchmarkRemoteEditLatency(b *testing.B) {
	const files = 200
	seed := func(e *env) {
		for i := range files {
			e.rwrite(fmt.Sprintf("/d%d/f%03d.md", i%10, i), "seed")
		}
	}
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-median")
		b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "ms-max")
	}
	for _, over := range []string{"local", "http"} {
		b.Run("feed/"+over, func(b *testing.B) {
			e := newEnv(b)
			seed(e)
			r := startFeedRun(b, e, "dir", over, false)
			r.waitFile(b, "/d0/f000.md", "seed", time.Minute)
			r.waitQuiet(b)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				i++
				want := fmt.Sprintf("edit %d", i)
				start := time.Now()
				e.rwrite("/d3/f013.md", want)
				lat = append(lat, r.waitFile(b, "/d3/f013.md", want, time.Minute).Sub(start))
				b.StopTimer()
				r.waitQuiet(b)
				b.StartTimer()
			}
			report(b, lat)
		})
	}
	b.Run("floor/direct-sync", func(b *testing.B) {
		e := newEnv(b)
		seed(e)
		en := e.engine("dir", nil)
		e.sync(en)
		var lat []time.Duration
		i := 0
		for b.Loop() {
			i++
			want := fmt.Sprintf("edit %d", i)
			start := time.Now()
			e.rwrite("/d3/f013.md", want)
			e.sync(en)
			lat = append(lat, time.Since(start))
			if got, _ := os.ReadFile(filepath.Join(en.Dir(), "d3", "f013.md")); string(got) != want {
				b.Fatalf("file holds %q", got)
			}
		}
		report(b, lat)
	})
}
