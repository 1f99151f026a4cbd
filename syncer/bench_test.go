package syncer_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

// Benchmarks (run only with -bench): the initial download and a no-change
// pass over 1,000 and 10,000 memories, each next to a baseline measured in
// the same run on the same store:
//
//   - download baseline: the full-content listing through the service plus
//     writing the same files to disk directly (os.WriteFile);
//
//   - no-change baseline: the sha-only listing through the service plus a
//     walk that lstats every file.
//
//     go test -run '^$' -bench . -benchtime 3x ./syncer
func BenchmarkSync(b *testing.B) {
	for _, n := range benchSizes() {
		e := newEnv(b)
		e.seed(n)
		b.Run(fmt.Sprintf("download/n=%d/engine", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				en := e.engine(fmt.Sprintf("dl%d", i), nil)
				rep, err := en.Sync(e.ctx)
				if err != nil || rep.Counts[syncer.KindDownload] != n {
					b.Fatalf("download: %v %v", err, rep.Counts)
				}
				b.StopTimer()
				en.Close()
				os.RemoveAll(en.Dir())
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})
		b.Run(fmt.Sprintf("download/n=%d/baseline-list-full+write", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				dir := filepath.Join(e.root, fmt.Sprintf("raw%d", i))
				cursor := ""
				for {
					pg, err := e.svc.ListMemories(e.ctx, e.storeID, trove.ListMemoriesParams{Limit: 20, View: trove.ViewFull, Cursor: cursor})
					if err != nil {
						b.Fatal(err)
					}
					for _, it := range pg.Data {
						p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(it.Memory.Path, "/")))
						os.MkdirAll(filepath.Dir(p), 0o755)
						if err := os.WriteFile(p, []byte(*it.Memory.Content), 0o644); err != nil {
							b.Fatal(err)
						}
					}
					if pg.NextPage == "" {
						break
					}
					cursor = pg.NextPage
				}
				b.StopTimer()
				os.RemoveAll(dir)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
		})

		en := e.engine("steady", func(o *syncer.Options) { o.StatTrust = time.Millisecond })
		if _, err := en.Sync(e.ctx); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // let the downloaded files age past StatTrust
		if _, err := en.Sync(e.ctx); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("nochange/n=%d/engine", n), func(b *testing.B) {
			for b.Loop() {
				rep, err := en.Sync(e.ctx)
				if err != nil || len(rep.Counts) != 0 || rep.Hashed != 0 {
					b.Fatalf("not a no-change pass: %v %v hashed %d", err, rep.Counts, rep.Hashed)
				}
			}
		})
		b.Run(fmt.Sprintf("nochange/n=%d/baseline-list-basic+walk", n), func(b *testing.B) {
			for b.Loop() {
				cursor := ""
				for {
					pg, err := e.svc.ListMemories(e.ctx, e.storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
					if err != nil {
						b.Fatal(err)
					}
					if pg.NextPage == "" {
						break
					}
					cursor = pg.NextPage
				}
				files := 0
				filepath.WalkDir(en.Dir(), func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						if _, err := d.Info(); err == nil {
							files++
						}
					}
					return nil
				})
				if files != n {
					b.Fatalf("walked %d files", files)
				}
			}
		})
	}
}

func benchSizes() []int {
	if os.Getenv("SYNCER_BENCH_SMALL") != "" {
		return []int{1000}
	}
	return []int{1000, 10000}
}
