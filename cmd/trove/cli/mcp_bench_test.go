package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/skipnote"
)

// refFSVersion is the reference MCP filesystem server the memory tool over
// MCP is measured against.
const refFSVersion = "2026.8.31"

// The edit workload of BenchmarkMCPEdits: mcpBenchFiles files are written,
// then mcpBenchHot of them get mcpBenchSlots str_replace edits each (one per
// slot line), mcpBenchConc calls at a time (one in the one-client order).
const (
	mcpBenchFiles = 300
	mcpBenchHot   = 50
	mcpBenchSlots = 16
	mcpBenchConc  = 16
	mcpBenchEdits = mcpBenchHot * mcpBenchSlots // 800
)

// mcpBenchContent is file i's initial content: one line per slot, each with
// a text that occurs once, plus some prose so that files are not tiny.
func mcpBenchContent(i int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# notes %03d\n\n", i)
	for s := 0; s < mcpBenchSlots; s++ {
		fmt.Fprintf(&sb, "- slot %02d of file %03d: before\n", s, i)
	}
	sb.WriteString("\nThe user prefers short answers, green tea, and tests that can fail.\n")
	return sb.String()
}

// mcpBenchServer is one MCP server under test, as the workload drives it.
type mcpBenchServer struct {
	cs   *mcp.ClientSession
	pids []int // its processes, for their CPU time
	// write and edit are the tool calls that create file i and replace
	// old with new in it; read returns file i's content as the server
	// holds it once the edits are done.
	write func(i int) *mcp.CallToolParams
	edit  func(i int, old, new string) *mcp.CallToolParams
	read  func(ctx context.Context, i int) (string, error)
}

// mcpBenchResult is what one run of the workload measured on one server.
type mcpBenchResult struct {
	writeDur, editDur time.Duration
	cpu               time.Duration // user+system CPU time of the server processes during the workload
	errors            int64         // calls answered with isError (not acknowledged)
	lost              int           // edits acknowledged but missing from the final content
}

func (r mcpBenchResult) opsPerSec() float64 {
	return float64(mcpBenchFiles+mcpBenchEdits) / (r.writeDur + r.editDur).Seconds()
}

// cpuPerOp is the servers' CPU time per operation, in milliseconds.
func (r mcpBenchResult) cpuPerOp() float64 {
	return float64(r.cpu.Microseconds()) / 1000 / float64(mcpBenchFiles+mcpBenchEdits)
}

func (r mcpBenchResult) editsPerSec() float64 {
	return float64(mcpBenchEdits) / r.editDur.Seconds()
}

// Chunks of the workload the servers take turns at (see runMCPBench).
const (
	mcpBenchWriteChunk = 60                // files
	mcpBenchEditChunk  = 5 * mcpBenchSlots // edits
)

// mcpBenchOrder is how the workload's calls are handed out: spread edits
// go round-robin over the files instead of file by file, and conc calls
// are in flight at a time.
type mcpBenchOrder struct {
	name   string
	spread bool
	conc   int
}

// runMCPBench runs the workload on each server: it writes the files, then
// runs the edits, order.conc calls at a time, and counts the
// acknowledged edits the final content lacks. The servers take turns chunk
// by chunk (mcpBenchWriteChunk writes, mcpBenchEditChunk edits), the first
// server alternating, so that the machine's load, which drifts over
// seconds on a shared machine, weighs alike on both. The edits are handed
// out file by file (the calls in flight edit one file), or with spread
// round-robin over the files (the calls in flight edit different files).
func runMCPBench(b *testing.B, servers []*mcpBenchServer, order mcpBenchOrder) []mcpBenchResult {
	b.Helper()
	ctx := context.Background()
	res := make([]mcpBenchResult, len(servers))
	failed := make([]sync.Map, len(servers)) // edit index → true when the call was refused
	// run makes calls from to to on server si and returns how long it took.
	run := func(si, from, to int, call func(s *mcpBenchServer, k int) *mcp.CallToolParams) time.Duration {
		s := servers[si]
		jobs := make(chan int)
		var wg sync.WaitGroup
		var firstErr atomic.Value
		start := time.Now()
		for w := 0; w < order.conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range jobs {
					r, err := s.cs.CallTool(ctx, call(s, k))
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						continue
					}
					if r.IsError {
						failed[si].Store(k, true)
						if atomic.AddInt64(&res[si].errors, 1) == 1 {
							b.Logf("tool error: %s", mcpResultText(r))
						}
					}
				}
			}()
		}
		for k := from; k < to; k++ {
			jobs <- k
		}
		close(jobs)
		wg.Wait()
		if err, _ := firstErr.Load().(error); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	write := func(s *mcpBenchServer, k int) *mcp.CallToolParams { return s.write(k) }
	edit := func(s *mcpBenchServer, k int) *mcp.CallToolParams {
		i, slot := k/mcpBenchSlots, k%mcpBenchSlots
		if order.spread {
			i, slot = k%mcpBenchHot, k/mcpBenchHot
		}
		return s.edit(i, fmt.Sprintf("slot %02d of file %03d: before", slot, i), fmt.Sprintf("slot %02d of file %03d: after", slot, i))
	}
	cpu := make([]time.Duration, len(servers))
	for si, s := range servers {
		cpu[si] = treeCPU(s.pids...)
	}
	turn := 0
	for from := 0; from < mcpBenchFiles; from += mcpBenchWriteChunk {
		for j := range servers {
			si := (turn + j) % len(servers)
			res[si].writeDur += run(si, from, min(from+mcpBenchWriteChunk, mcpBenchFiles), write)
		}
		turn++
	}
	for si := range servers {
		if res[si].errors != 0 {
			b.Fatalf("server %d: %d of %d writes failed", si, res[si].errors, mcpBenchFiles)
		}
	}
	for from := 0; from < mcpBenchEdits; from += mcpBenchEditChunk {
		for j := range servers {
			si := (turn + j) % len(servers)
			res[si].editDur += run(si, from, min(from+mcpBenchEditChunk, mcpBenchEdits), edit)
		}
		turn++
	}
	for si, s := range servers {
		res[si].cpu = treeCPU(s.pids...) - cpu[si]
		for i := 0; i < mcpBenchHot; i++ {
			content, err := s.read(ctx, i)
			if err != nil {
				b.Fatal(err)
			}
			for slot := 0; slot < mcpBenchSlots; slot++ {
				if _, refused := failed[si].Load(i*mcpBenchSlots + slot); refused {
					continue
				}
				if !strings.Contains(content, fmt.Sprintf("slot %02d of file %03d: after", slot, i)) {
					res[si].lost++
				}
			}
		}
	}
	return res
}

// mcpResultText is the text of a tool result.
func mcpResultText(r *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// treeCPU is the user and system CPU time the processes pids and their
// descendants have used so far, from /proc (0 where there is no /proc).
// The benchmark takes it before and after the workload, so that start-up
// (npx resolving the package, node loading it; trove opening its database)
// is not counted.
func treeCPU(pids ...int) time.Duration {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	type proc struct {
		ppid  int
		ticks int64
	}
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses:
		// state ppid … utime (14th field of the line) stime (15th).
		_, rest, ok := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		procs[pid] = proc{ppid: ppid, ticks: utime + stime}
	}
	in := map[int]bool{}
	for _, p := range pids {
		in[p] = true
	}
	for grew := true; grew; {
		grew = false
		for pid, p := range procs {
			if !in[pid] && in[p.ppid] {
				in[pid], grew = true, true
			}
		}
	}
	var ticks int64
	for pid := range in {
		ticks += procs[pid].ticks
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ is 100 on Linux
}

// startTroveMCP starts `trove serve` on a fresh data directory with one
// store, then `trove mcp --store` against it over HTTP (TROVE_URL), as a
// stdio child the client connects to; pids are the two processes.
func startTroveMCP(b *testing.B, client *mcp.Client) (cs *mcp.ClientSession, pids []int, stop func()) {
	b.Helper()
	bin := buildTrove(b)
	data := b.TempDir()
	svc, closeDB := openData(b, data)
	_, secret, err := svc.CreateKey(context.Background(), defaultWorkspace, "mcp bench")
	if err != nil {
		b.Fatal(err)
	}
	p, err := svc.Authenticate(context.Background(), secret)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateStore(trove.WithPrincipal(context.Background(), p), trove.CreateStoreParams{Name: "Bench"}); err != nil {
		b.Fatal(err)
	}
	closeDB()
	serve, url := startServeProcess(b, bin, data)
	cmd := exec.Command(bin, "mcp", "--store", "Bench")
	cmd.Env = append(os.Environ(), "TROVE_DATA=", "TROVE_DATABASE=", "TROVE_URL="+url, "TROVE_API_KEY="+secret)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err = client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		serve.Process.Kill()
		serve.Wait()
		b.Fatalf("connect to trove mcp: %v\nstderr: %s", err, stderr.String())
	}
	return cs, []int{serve.Process.Pid, cmd.Process.Pid}, func() {
		cs.Close()
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
	}
}

// startRefMCP starts the reference filesystem server with npx over a fresh
// directory, which it returns; pid is npx's process.
func startRefMCP(b *testing.B, client *mcp.Client) (cs *mcp.ClientSession, dir string, pid int, stop func()) {
	b.Helper()
	if _, err := exec.LookPath("npx"); err != nil {
		if os.Getenv("TROVE_REQUIRE_NODE") != "" {
			b.Fatal("npx is not installed and TROVE_REQUIRE_NODE is set")
		}
		skipnote.Skip(b, "npx is not installed (it runs the reference MCP filesystem server): install Node.js")
	}
	pkg := "@modelcontextprotocol/server-filesystem"
	modDir := npmPackage(b, pkg, refFSVersion, "mcp-server-filesystem-"+refFSVersion, "it runs the reference MCP filesystem server")
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	// Run from the cache directory, npx finds the package installed there
	// instead of fetching it.
	cmd := exec.Command("npx", "-y", pkg+"@"+refFSVersion, dir)
	cmd.Dir = modDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cs, err = client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatalf("connect to %s: %v\nstderr: %s", pkg, err, stderr.String())
	}
	return cs, dir, cmd.Process.Pid, func() { cs.Close() }
}

// BenchmarkMCPEdits measures the memory tool over MCP against the reference
// MCP filesystem server, @modelcontextprotocol/server-filesystem run with
// npx on a local directory, with one go-sdk client driving both over stdio
// in the same run: trove is `trove mcp --store` talking HTTP to a local
// `trove serve` (SQLite, fsync per commit). Each iteration writes 300
// files, then makes 800 str_replace edits (edit_file for the reference),
// 16 calls in flight, on each server, the two taking turns chunk by chunk
// (runMCPBench), and reports operations per second (writes and edits) of
// both, their ratio, the servers' CPU time per operation and the
// acknowledged edits each lost. Trove must lose none.
//
// hot-files hands the edits out file by file, so the calls in flight edit
// one file (the reference, which reads, modifies and writes without a
// lock, loses most of them; trove runs them one after the other); spread
// hands them out round-robin, so they edit different files; one-client
// makes every call, writes included, one after the other, as one agent
// does (file by file). Run with -benchtime 1x -count 5:
//
//	go test -run '^$' -bench BenchmarkMCPEdits -benchtime 1x -count 5 ./cmd/trove/cli/
func BenchmarkMCPEdits(b *testing.B) {
	for _, order := range []mcpBenchOrder{
		{name: "hot-files", conc: mcpBenchConc},
		{name: "spread", spread: true, conc: mcpBenchConc},
		{name: "one-client", conc: 1},
	} {
		b.Run(order.name, func(b *testing.B) { benchMCPEdits(b, order) })
	}
}

func benchMCPEdits(b *testing.B, order mcpBenchOrder) {
	client := mcp.NewClient(&mcp.Implementation{Name: "trove-bench", Version: "1"}, nil)
	var troveOps, refOps, troveCPU, refCPU, refLost float64
	for n := 0; n < b.N; n++ {
		cs, pids, stopTrove := startTroveMCP(b, client)
		trove := &mcpBenchServer{
			cs:   cs,
			pids: pids,
			write: func(i int) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{
					"command": "create", "path": fmt.Sprintf("/memories/notes/f%03d.md", i), "file_text": mcpBenchContent(i)}}
			},
			edit: func(i int, old, new string) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{
					"command": "str_replace", "path": fmt.Sprintf("/memories/notes/f%03d.md", i), "old_str": old, "new_str": new}}
			},
			read: func(ctx context.Context, i int) (string, error) {
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory", Arguments: map[string]any{
					"command": "view", "path": fmt.Sprintf("/memories/notes/f%03d.md", i)}})
				if err != nil {
					return "", err
				}
				if r.IsError {
					return "", fmt.Errorf("view f%03d: %s", i, mcpResultText(r))
				}
				return mcpResultText(r), nil
			},
		}
		rcs, dir, pid, stopRef := startRefMCP(b, client)
		notes := filepath.Join(dir, "notes")
		if err := os.Mkdir(notes, 0o755); err != nil {
			b.Fatal(err)
		}
		ref := &mcpBenchServer{
			cs:   rcs,
			pids: []int{pid},
			write: func(i int) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{
					"path": filepath.Join(notes, fmt.Sprintf("f%03d.md", i)), "content": mcpBenchContent(i)}}
			},
			edit: func(i int, old, new string) *mcp.CallToolParams {
				return &mcp.CallToolParams{Name: "edit_file", Arguments: map[string]any{
					"path": filepath.Join(notes, fmt.Sprintf("f%03d.md", i)), "edits": []map[string]any{{"oldText": old, "newText": new}}}}
			},
			read: func(_ context.Context, i int) (string, error) {
				data, err := os.ReadFile(filepath.Join(notes, fmt.Sprintf("f%03d.md", i)))
				return string(data), err
			},
		}
		servers := []*mcpBenchServer{trove, ref}
		if n%2 == 1 {
			servers = []*mcpBenchServer{ref, trove}
		}
		res := runMCPBench(b, servers, order)
		tr, rf := res[0], res[1]
		if n%2 == 1 {
			tr, rf = rf, tr
		}
		stopTrove()
		stopRef()
		if tr.lost != 0 || tr.errors != 0 {
			b.Errorf("trove: %d acknowledged edits lost, %d calls refused; want none", tr.lost, tr.errors)
		}
		b.Logf("trove %.0f ops/s (%.0f edits/s, %.2f ms CPU/op), reference %.0f ops/s (%.0f edits/s, %.2f ms CPU/op): ratio %.2f (edits %.2f); lost: trove %d, reference %d of %d (reference refused %d)",
			tr.opsPerSec(), tr.editsPerSec(), tr.cpuPerOp(), rf.opsPerSec(), rf.editsPerSec(), rf.cpuPerOp(),
			tr.opsPerSec()/rf.opsPerSec(), tr.editsPerSec()/rf.editsPerSec(), tr.lost, rf.lost, mcpBenchEdits, rf.errors)
		troveOps += tr.opsPerSec()
		refOps += rf.opsPerSec()
		troveCPU += tr.cpuPerOp()
		refCPU += rf.cpuPerOp()
		refLost += float64(rf.lost)
	}
	n := float64(b.N)
	b.ReportMetric(troveOps/n, "trove-ops/s")
	b.ReportMetric(refOps/n, "ref-ops/s")
	b.ReportMetric(troveOps/refOps, "ratio")
	b.ReportMetric(troveCPU/n, "trove-cpu-ms/op")
	b.ReportMetric(refCPU/n, "ref-cpu-ms/op")
	b.ReportMetric(refLost/n, "ref-lost")
	b.ReportMetric(0, "ns/op")
}
