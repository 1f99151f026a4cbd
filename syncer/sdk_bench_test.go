package syncer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/lib/environments"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/syncer"
)

// sdkBench is one trove serve (httpapi over core over SQLite, on loopback)
// with two stores seeded with the same n memories: one synced by Trove's
// engine over httpapi.Client (what trove sync --once --url runs), one by
// the official Go SDK's worker (lib/environments.SessionMemoryStores), so
// that neither sees the other's writes.
type sdkBench struct {
	e                *env
	url, key         string
	troveStore       string
	sdkStore         string
	sdk              anthropic.Client
	n                int
	troveSeq, sdkSeq int // directories made so far
}

func newSDKBench(b testing.TB, n int) *sdkBench {
	e := newEnv(b)
	_, key, err := e.svc.CreateKey(e.ctx, "wrkspc_test", "bench")
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.Config{Services: e.svc, Sessions: e.svc, Auth: e.svc}).HTTPServer()
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	s := &sdkBench{e: e, url: "http://" + ln.Addr().String(), key: key, n: n, troveStore: e.storeID}
	st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "sdk"})
	if err != nil {
		b.Fatal(err)
	}
	s.sdkStore = st.ID
	e.seed(n)
	e.storeID = s.sdkStore
	e.seed(n)
	e.storeID = s.troveStore
	s.sdk = anthropic.NewClient(option.WithBaseURL(s.url+"/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	return s
}

// troveEngine opens a fresh engine over HTTP into a new directory.
func (s *sdkBench) troveEngine(b *testing.B) *syncer.Engine {
	s.troveSeq++
	dir := filepath.Join(s.e.root, fmt.Sprintf("trove%d", s.troveSeq))
	en, err := syncer.New(syncer.Options{
		Services: httpapi.NewClient(s.url, s.key), StoreID: s.troveStore,
		Dir: dir, StateDir: dir + ".state", StatTrust: time.Millisecond,
	})
	if err != nil {
		b.Fatal(err)
	}
	return en
}

// sdkDownload makes a fresh SDK worker and downloads the SDK's store into
// a new directory; it returns the worker and the directory.
func (s *sdkBench) sdkDownload(b *testing.B) (*environments.SessionMemoryStores, string) {
	s.sdkSeq++
	dir := filepath.Join(s.e.root, fmt.Sprintf("sdk%d", s.sdkSeq))
	w, err := environments.NewSessionMemoryStores(s.sdk, environments.SessionMemoryStoresOptions{
		Workdir: s.e.root, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	var session anthropic.BetaManagedAgentsSession
	body := fmt.Sprintf(`{"resources":[{"type":"memory_store","memory_store_id":%q,"mount_path":%q,"name":"m","access":"read_write"}]}`, s.sdkStore, dir)
	if err := json.Unmarshal([]byte(body), &session); err != nil {
		b.Fatal(err)
	}
	if err := w.Download(context.Background(), &session); err != nil {
		b.Fatal(err)
	}
	return w, dir
}

// edits returns the paths of 1 % of the seeded memories (at least one),
// spread over the store, different in each round.
func (s *sdkBench) edits(round int) []string {
	var out []string
	step := 100
	for i := round % step; i < s.n; i += step {
		out = append(out, fmt.Sprintf("/d%02d/f%05d.md", i%50, i))
	}
	return out
}

// remoteEdit changes the memories at paths in store through core.
func (s *sdkBench) remoteEdit(b *testing.B, store string, paths []string, tag string) {
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	cursor := ""
	for {
		pg, err := s.e.svc.ListMemories(s.e.ctx, store, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range pg.Data {
			if it.Memory != nil && want[it.Memory.Path] {
				c := fmt.Sprintf("# %s\nremote edit %s\n", it.Memory.Path, tag)
				if _, err := s.e.svc.UpdateMemory(s.e.ctx, store, it.Memory.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
					b.Fatal(err)
				}
			}
		}
		if pg.NextPage == "" {
			return
		}
		cursor = pg.NextPage
	}
}

// localEdit rewrites the files at paths below dir.
func localEdit(b *testing.B, dir string, paths []string, tag string) {
	for _, p := range paths {
		writeFile(b, dir, p, fmt.Sprintf("# %s\nlocal edit %s\n", p, tag))
	}
}

// BenchmarkSyncVsSDK: Trove's sync engine over HTTP (httpapi.Client, as
// trove sync --once --url runs it) against the official Go SDK's worker
// (lib/environments.SessionMemoryStores: Download for the first download,
// Finish for a later pass, the only pass the SDK exports without waiting
// for its 5 s minimum interval) on the same trove serve, at 1,000 and
// 10,000 memories: the first download, a pass with no change, a pass after
// 1 % of the files changed locally and one after 1 % of the memories
// changed remotely. Each operation times one Trove pass and one SDK pass
// back to back (interleaved, so the machine's drift falls on both) and
// reports trove-ms/op, sdk-ms/op and x-sdk (Trove's time over the SDK's:
// below 1 Trove is faster). The Trove engine runs as trove sync does:
// atomic writes, base objects, one flush of the file system before the
// manifest names anything; the SDK's worker writes without fsync.
//
//	go test -run '^$' -bench SyncVsSDK -benchtime 3x ./syncer
func BenchmarkSyncVsSDK(b *testing.B) {
	for _, n := range benchSizes() {
		s := newSDKBench(b, n)
		// The steady engine for the later passes.
		steady := s.troveEngine(b)
		if rep, err := steady.Sync(context.Background()); err != nil || rep.Counts[syncer.KindDownload] != n {
			b.Fatalf("download: %v %v", err, rep.Counts)
		}
		time.Sleep(5 * time.Millisecond) // past StatTrust
		b.Cleanup(func() { steady.Close() })
		report := func(b *testing.B, tr, sd time.Duration) {
			b.ReportMetric(float64(tr.Milliseconds())/float64(b.N), "trove-ms/op")
			b.ReportMetric(float64(sd.Milliseconds())/float64(b.N), "sdk-ms/op")
			b.ReportMetric(tr.Seconds()/sd.Seconds(), "x-sdk")
			b.ReportMetric(0, "ns/op")
		}
		b.Run(fmt.Sprintf("download/n=%d", n), func(b *testing.B) {
			var tr, sd time.Duration
			for b.Loop() {
				en := s.troveEngine(b)
				t0 := time.Now()
				rep, err := en.Sync(context.Background())
				tr += time.Since(t0)
				if err != nil || rep.Counts[syncer.KindDownload] != n {
					b.Fatalf("trove download: %v %v", err, rep.Counts)
				}
				en.Close()
				t0 = time.Now()
				w, dir := s.sdkDownload(b)
				sd += time.Since(t0)
				checkFiles(b, dir, n+1) // + the SDK's marker file
				w.Dispose()
				os.RemoveAll(en.Dir())
			}
			report(b, tr, sd)
		})
		// A later pass: Trove's steady engine, and a fresh SDK worker whose
		// Download (untimed) precedes change, then its timed Finish.
		pass := func(name string, change func(round int, troveDir, sdkDir string), check func(*syncer.Report) bool) {
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				var tr, sd time.Duration
				round := 0
				for b.Loop() {
					round++
					b.StopTimer()
					w, dir := s.sdkDownload(b)
					change(round, steady.Dir(), dir)
					b.StartTimer()
					t0 := time.Now()
					rep, err := steady.Sync(context.Background())
					tr += time.Since(t0)
					if err != nil || len(rep.Errors) > 0 || !check(rep) {
						b.Fatalf("trove %s pass: %v %+v %v", name, err, rep.Errors, rep.Counts)
					}
					t0 = time.Now()
					w.Finish(context.Background())
					sd += time.Since(t0)
					b.StopTimer()
					w.Dispose()
					b.StartTimer()
				}
				report(b, tr, sd)
			})
		}
		pass("nochange", func(int, string, string) {}, func(r *syncer.Report) bool { return len(r.Counts) == 0 })
		pass("local1pct", func(round int, troveDir, sdkDir string) {
			tag := fmt.Sprintf("l%d", round)
			localEdit(b, troveDir, s.edits(round), tag)
			localEdit(b, sdkDir, s.edits(round), tag)
		}, func(r *syncer.Report) bool { return r.Counts[syncer.KindUpload] == len(s.edits(0)) })
		pass("remote1pct", func(round int, _, _ string) {
			tag := fmt.Sprintf("r%d", round)
			s.remoteEdit(b, s.troveStore, s.edits(round+50), tag)
			s.remoteEdit(b, s.sdkStore, s.edits(round+50), tag)
		}, func(r *syncer.Report) bool { return r.Counts[syncer.KindDownload] == len(s.edits(0)) })
	}
}

// checkFiles fails unless dir holds want regular files.
func checkFiles(b *testing.B, dir string, want int) {
	got := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, ".trove-tmp") {
			got++
		}
		return nil
	})
	if got != want {
		b.Fatalf("%s holds %d files, want %d", dir, got, want)
	}
}
