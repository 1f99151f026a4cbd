package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

// BenchmarkGetMemory is GET of one memory at concurrency 16 on each
// transport over SQLite, with a minimal keep-alive client in the same
// process (as trove bench's lean client). Besides ns/op it reports
// cpu-µs/op: user+system CPU of the whole process per request.
func BenchmarkGetMemory(b *testing.B) {
	for _, tr := range transports {
		b.Run(string(tr), func(b *testing.B) {
			ctx := context.Background()
			db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			svc := core.New(db, core.Options{AuthCacheTTL: 2 * time.Second})
			k, secret, err := svc.CreateKey(ctx, testWorkspace, "bench")
			if err != nil {
				b.Fatal(err)
			}
			pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: testWorkspace, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
			st, err := svc.CreateStore(pctx, trove.CreateStoreParams{Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			var paths []string
			for i := range 100 {
				m, err := svc.CreateMemory(pctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/m%03d.md", i), Content: string(bytes.Repeat([]byte("x"), 200))})
				if err != nil {
					b.Fatal(err)
				}
				paths = append(paths, "/v1/memory_stores/"+st.ID+"/memories/"+m.ID)
			}
			base, stop := serveTransport(b, tr, httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}), nil)
			defer stop()
			runConcurrent(b, base[len("http://"):], secret, func(i int) string { return paths[i%len(paths)] })
		})
	}
}

// BenchmarkHealthz is the fixed cost of a request: GET /healthz (no
// database, no credential) at concurrency 16 on each transport, next to a
// bare fasthttp handler sending the same body ("fasthttp-bare"), the
// floor of the transport with this client.
func BenchmarkHealthz(b *testing.B) {
	for _, tr := range []transport{netHTTP, fastHTTP, "fasthttp-bare"} {
		b.Run(string(tr), func(b *testing.B) {
			var base string
			var stop func()
			if tr == "fasthttp-bare" {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					b.Fatal(err)
				}
				fs := &fasthttp.Server{NoDefaultServerHeader: true, Handler: func(ctx *fasthttp.RequestCtx) {
					ctx.SetContentType("application/json")
					ctx.Response.Header.Set("Request-Id", "req_0000000000000000000000")
					ctx.WriteString(`{"status":"ok"}` + "\n")
				}}
				go fs.Serve(ln)
				base, stop = "http://"+ln.Addr().String(), func() { _ = fs.Shutdown() }
			} else {
				base, stop = serveTransport(b, tr, httpapi.NewServer(httpapi.Config{}), nil)
			}
			defer stop()
			runConcurrent(b, base[len("http://"):], "", func(int) string { return "/healthz" })
		})
	}
}

// runConcurrent sends b.N GETs of path(i) over 16 keep-alive connections
// and reports cpu-µs/op.
func runConcurrent(b *testing.B, addr, auth string, path func(i int) string) {
	const conc = 16
	conns := make([]*benchConn, conc)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = &benchConn{c: c, br: bufio.NewReaderSize(c, 16<<10), auth: auth}
	}
	var next sync.Mutex
	n := 0
	b.ResetTimer()
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			for {
				next.Lock()
				i := n
				n++
				next.Unlock()
				if i >= b.N {
					return
				}
				if err := c.get(path(i)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type benchConn struct {
	c    net.Conn
	br   *bufio.Reader
	auth string
	buf  []byte
}

func (bc *benchConn) get(path string) error {
	r := append(bc.buf[:0], "GET "...)
	r = append(r, path...)
	r = append(r, " HTTP/1.1\r\nHost: bench\r\n"...)
	if bc.auth != "" {
		r = append(r, "Authorization: Bearer "...)
		r = append(r, bc.auth...)
		r = append(r, "\r\nanthropic-beta: "+httpapi.BetaAgentMemory+"\r\n"...)
	}
	r = append(r, "\r\n"...)
	bc.buf = r
	if _, err := bc.c.Write(r); err != nil {
		return err
	}
	line, err := bc.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
		return fmt.Errorf("status line %q", line)
	}
	length := -1
	for {
		h, err := bc.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		if name, val, ok := bytes.Cut(h, []byte(":")); ok && bytes.EqualFold(name, []byte("Content-Length")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(val)))
		}
	}
	if length < 0 {
		return fmt.Errorf("no Content-Length")
	}
	_, err = bc.br.Discard(length)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
