//go:build linux

package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/loadgen"
)

// idleStreams and idleWindow size BenchmarkIdleEventStreams.
const (
	idleStreams = 1000
	idleWindow  = 10 * time.Second
	idleProbes  = 300
)

// BenchmarkIdleEventStreams is issue 21's "1,000 idle sessions each with an
// open event stream on one node": one server over SQLite on loopback, 1,000
// managed sessions, one SSE stream open on each (a minimal raw-socket
// client, one small reader goroutine per connection, in the same process),
// held idle for idleWindow. It reports the process's RSS growth from
// opening the streams (rss-MiB; client included), the process CPU per
// second of the idle window (cpu-ms/s), the streams dropped (must be 0:
// each must still be open and then deliver one event appended to its
// session), and the latency of a plain GET of a memory while they are
// open against the same request with none open, measured in the same run
// (base-/idle-p50-ms, -p99-ms). It runs once whatever b.N
// (-benchtime 1x).
func BenchmarkIdleEventStreams(b *testing.B) {
	ctx := context.Background()
	svc, secret, pctx, st := benchStore(b, core.Options{AuthCacheTTL: 2 * time.Second})
	m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: "/m.md", Content: string(bytes.Repeat([]byte("x"), 200))})
	if err != nil {
		b.Fatal(err)
	}
	memPath := "/v1/memory_stores/" + st.ID + "/memories/" + m.ID
	a, err := svc.CreateAgent(pctx, trove.CreateAgentParams{Name: "helper", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}})
	if err != nil {
		b.Fatal(err)
	}
	env, err := svc.CreateEnvironment(pctx, trove.CreateEnvironmentParams{Name: "node"})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, idleStreams)
	for i := range ids {
		se, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: a.ID}, EnvironmentID: env.ID})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = se.ID
	}
	cfg := httpapi.Config{Services: svc, Sessions: svc, Events: svc, Auth: svc, Agents: svc, Environments: svc, Work: svc}
	base, stop := serveTransport(b, netHTTP, httpapi.NewServer(cfg), nil)
	defer stop()
	addr := base[len("http://"):]

	probe := &loadgen.Conn{Addr: addr, Header: "Authorization: Bearer " + secret + "\r\nanthropic-beta: " + httpapi.BetaAgentMemory + "\r\n"}
	defer probe.Close()
	latency := func() (p50, p99 time.Duration) {
		ds := make([]time.Duration, idleProbes)
		for i := range ds {
			t0 := time.Now()
			status, body, err := probe.Do("GET", memPath, nil)
			ds[i] = time.Since(t0)
			if err != nil || status != 200 {
				b.Fatalf("GET %s: %d %s %v", memPath, status, body, err)
			}
		}
		slices.Sort(ds)
		return ds[len(ds)/2], ds[len(ds)*99/100]
	}
	basep50, basep99 := latency()

	runtimeGC()
	rss0 := vmRSS(b)
	streams := make([]*idleStream, len(ids))
	var dropped atomic.Int64
	var wg sync.WaitGroup
	for i, id := range ids {
		s, err := openIdleStream(addr, id, secret)
		if err != nil {
			b.Fatalf("stream %d: %v", i, err)
		}
		streams[i] = s
		wg.Go(func() {
			if !s.read() {
				dropped.Add(1)
			}
		})
	}
	defer func() {
		for _, s := range streams {
			s.c.Close()
		}
		wg.Wait()
	}()
	// Every stream is open (its headers and first comment read) before
	// the idle window starts.
	time.Sleep(StreamSettle)
	rss1 := vmRSS(b)
	cpu0, t0 := loadgen.ProcessCPU(), time.Now()
	time.Sleep(idleWindow)
	cpu1, t1 := loadgen.ProcessCPU(), time.Now()
	idlep50, idlep99 := latency()
	if n := dropped.Load(); n != 0 {
		b.Errorf("%d streams dropped during the idle window", n)
	}

	// Then one event appended to each session reaches its stream.
	deliver := time.Now()
	for _, id := range ids {
		if _, err := svc.AppendAgentEvents(ctx, id, []trove.NewSessionEvent{
			{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"wake"}]}`}}, core.AgentEventsOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	missing := 0
	timeout := time.After(30 * time.Second)
	for _, s := range streams {
		select {
		case <-s.got:
		case <-timeout:
			missing++
		}
	}
	deliverAll := time.Since(deliver)
	if missing != 0 {
		b.Errorf("%d of %d streams did not deliver the appended event", missing, len(streams))
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(rss1-rss0)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(rss1-rss0)/1024/float64(len(ids)), "rss-KiB/stream")
	b.ReportMetric(ms(cpu1-cpu0)/t1.Sub(t0).Seconds(), "cpu-ms/s")
	b.ReportMetric(float64(dropped.Load()+int64(missing)), "dropped")
	b.ReportMetric(ms(basep50), "base-p50-ms")
	b.ReportMetric(ms(basep99), "base-p99-ms")
	b.ReportMetric(ms(idlep50), "idle-p50-ms")
	b.ReportMetric(ms(idlep99), "idle-p99-ms")
	b.ReportMetric(ms(deliverAll), "deliver-all-ms")
}

// StreamSettle is how long BenchmarkIdleEventStreams lets the open streams
// settle before measuring the idle window.
const StreamSettle = time.Second

func runtimeGC() { debug.FreeOSMemory() }

// idleStream is one raw SSE connection: got is closed when an event
// (an "event: " line) arrives.
type idleStream struct {
	c   net.Conn
	br  *bufio.Reader
	got chan struct{}
}

func openIdleStream(addr, id, secret string) (*idleStream, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET /v1/sessions/%s/events/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nanthropic-beta: managed-agents-2026-04-01\r\nAccept: text/event-stream\r\n\r\n", id, addr, secret)
	br := bufio.NewReaderSize(c, 512)
	line, err := br.ReadSlice('\n')
	if err != nil {
		c.Close()
		return nil, err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
		c.Close()
		return nil, fmt.Errorf("status %q", line)
	}
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
	}
	return &idleStream{c: c, br: br, got: make(chan struct{})}, nil
}

// read reads the stream until an event arrives (true) or the connection
// ends first (false: dropped). Long lines are read in pieces.
func (s *idleStream) read() bool {
	for {
		line, err := s.br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			return false
		}
		if bytes.HasPrefix(line, []byte("event: ")) {
			close(s.got)
			_, _ = io.Copy(io.Discard, s.br) // until the benchmark closes it
			return true
		}
	}
}

// vmRSS is the process's resident set size in bytes (/proc/self/status).
func vmRSS(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("VmRSS:")); ok {
			f := bytes.Fields(v)
			n, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n << 10 // kB
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
