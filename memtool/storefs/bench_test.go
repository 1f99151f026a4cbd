package storefs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
)

// executor is what the benchmark drives: memtool.Tool or storefs.Tool.
type executor interface {
	Execute(ctx context.Context, input []byte) memtool.Result
}

// benchCalls runs a mixed memory-tool workload, one call per iteration:
// view of a file, str_replace, insert, view of the directory, in rotation
// over 16 files of 20 lines, so the figure is tool calls per second.
func benchCalls(b *testing.B, ctx context.Context, tool executor) {
	const files = 16
	for i := range files {
		text := ""
		for k := range 20 {
			text += fmt.Sprintf("line %d of file %d: some remembered fact\n", k, i)
		}
		if r := tool.Execute(ctx, create(fmt.Sprintf("/memories/bench/f%02d.md", i), text)); r.IsError {
			b.Fatal(r.String())
		}
	}
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		p := fmt.Sprintf("/memories/bench/f%02d.md", n%files)
		var input []byte
		switch n % 4 {
		case 0:
			input = view(p)
		case 1:
			old := fmt.Sprintf("line %d of file %d: some remembered fact", (n/4)%20, n%files)
			input = strReplace(p, old, fmt.Sprintf("%s #%d", old, n))
		case 2:
			input = insert(p, 1, fmt.Sprintf("inserted %d", n))
		case 3:
			input = view("/memories/bench")
		}
		if r := tool.Execute(ctx, input); r.IsError {
			b.Fatalf("%s: %s", input, r.String())
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkToolCalls compares the store backend with the directory backend
// (the baseline) in the same run:
//
//	go test -run '^$' -bench BenchmarkToolCalls -benchtime 2s ./memtool/storefs/
func BenchmarkToolCalls(b *testing.B) {
	b.Run("dir", func(b *testing.B) {
		fsys, err := memtool.NewDirFS(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		benchCalls(b, context.Background(), memtool.New(fsys, memtool.Options{}))
	})
	b.Run("store-core-sqlite", func(b *testing.B) {
		svc := newCore(b)
		ctx := agent("apikey_bench")
		benchCalls(b, ctx, storefs.NewTool(storefs.New(svc, newStore(b, ctx, svc), storefs.Options{}), memtool.Options{}))
	})
	b.Run("store-httpapi-loopback", func(b *testing.B) {
		svc := newCore(b)
		ctx := agent("apikey_bench")
		var remote trove.Services = newRemote(b, svc)
		benchCalls(b, ctx, storefs.NewTool(storefs.New(remote, newStore(b, ctx, remote), storefs.Options{}), memtool.Options{}))
	})
}
