package storefs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
)

// executor is what the benchmark drives (a memtool.Tool).
type executor interface {
	Execute(ctx context.Context, input []byte) memtool.Result
}

// benchCalls runs a mixed memory-tool workload, one call per iteration:
// view of a file, str_replace, insert, view of the directory, in rotation
// over 16 files of 20 lines, so the figure is tool calls per second.
func benchCalls(b *testing.B, ctx context.Context, tool executor, reset func()) {
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
	if reset != nil {
		reset()
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

// counting wraps a trove.Services and counts the memory calls made through
// it (for httpapi.Client: the HTTP requests).
type counting struct {
	trove.Services
	n atomic.Int64
}

func (c *counting) GetMemory(ctx context.Context, storeID, id string, v trove.View) (*trove.Memory, error) {
	c.n.Add(1)
	return c.Services.GetMemory(ctx, storeID, id, v)
}
func (c *counting) ListMemories(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	c.n.Add(1)
	return c.Services.ListMemories(ctx, storeID, p)
}
func (c *counting) CreateMemory(ctx context.Context, storeID string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	c.n.Add(1)
	return c.Services.CreateMemory(ctx, storeID, p)
}
func (c *counting) UpdateMemory(ctx context.Context, storeID, id string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	c.n.Add(1)
	return c.Services.UpdateMemory(ctx, storeID, id, p)
}
func (c *counting) DeleteMemory(ctx context.Context, storeID, id, sha string) error {
	c.n.Add(1)
	return c.Services.DeleteMemory(ctx, storeID, id, sha)
}

// benchStore runs the workload through storefs over svc and reports the
// store calls per tool call as well.
func benchStore(b *testing.B, ctx context.Context, svc trove.Services) {
	c := &counting{Services: svc}
	storeID := newStore(b, ctx, svc)
	benchCalls(b, ctx, memtool.New(storefs.New(c, storeID, storefs.Options{}), memtool.Options{}), func() { c.n.Store(0) })
	b.ReportMetric(float64(c.n.Load())/float64(b.N), "store-calls/call")
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
		benchCalls(b, context.Background(), memtool.New(fsys, memtool.Options{}), nil)
	})
	b.Run("store-core-sqlite", func(b *testing.B) {
		benchStore(b, agent("apikey_bench"), newCore(b))
	})
	b.Run("store-httpapi-loopback", func(b *testing.B) {
		benchStore(b, agent("apikey_bench"), newRemote(b, newCore(b)))
	})
}
