package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove/httpapi"
)

// TestOversizeBodyRefusalReachesTheClient sends a body far over the limit
// and far over what the kernel buffers (32 MiB against a 4 KiB limit) to a
// server that refuses it unread: from its Content-Length, or, chunked,
// after reading just over the limit. The
// client must read the 413 envelope, however it interleaves writing the
// body and reading the answer:
//
//   - "concurrent" writes while it reads, as the Go SDK's transport does;
//   - "sequential" writes the whole body before it reads, as many
//     clients do: the server keeps reading and dropping the body after
//     its answer (for up to 5 s), so the answer is not lost to a reset.
//
// Closing a connection with unread bytes makes the kernel reset it, and the
// reset can reach the client before it reads the answer: the refusal must
// keep reading until the client has sent its body (or a time limit).
func TestOversizeBodyRefusalReachesTheClient(t *testing.T) {
	const body = 32 << 20
	for _, chunked := range []bool{false, true} {
		for _, sequential := range []bool{false, true} {
			mode := map[bool]string{false: "concurrent", true: "sequential"}[sequential]
			framing := map[bool]string{false: "length", true: "chunked"}[chunked]
			for _, tr := range transports {
				t.Run(framing+"/"+mode+"/"+string(tr), func(t *testing.T) {
					e := newEnv(t, tr, func(c *httpapi.Config) { c.MaxBodyBytes = 4 << 10 })
					addr := strings.TrimPrefix(e.url, "http://")
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Fatal(err)
					}
					defer c.Close()
					_ = c.SetDeadline(time.Now().Add(30 * time.Second))
					head := fmt.Sprintf("POST /v1/memory_stores HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
						"anthropic-beta: %s\r\nContent-Type: application/json\r\n", e.key, httpapi.BetaAgentMemory)
					piece := make([]byte, 64<<10)
					if chunked {
						head += "Transfer-Encoding: chunked\r\n\r\n"
						piece = append(fmt.Appendf(nil, "%x\r\n", len(piece)), append(piece, "\r\n"...)...)
					} else {
						head += fmt.Sprintf("Content-Length: %d\r\n\r\n", body)
					}
					write := func() error {
						if _, err := io.WriteString(c, head); err != nil {
							return err
						}
						for sent := 0; sent < body; sent += 64 << 10 {
							if _, err := c.Write(piece); err != nil {
								return err
							}
						}
						if chunked {
							_, err := io.WriteString(c, "0\r\n\r\n")
							return err
						}
						return nil
					}
					written := make(chan error, 1)
					if sequential {
						if err := write(); err != nil {
							t.Fatalf("writing the body: %v", err)
						}
					} else {
						go func() { written <- write() }()
					}
					res, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: "POST"})
					if err != nil {
						t.Fatalf("reading the answer: %v", err)
					}
					b, err := io.ReadAll(res.Body)
					res.Body.Close()
					if err != nil {
						t.Fatalf("reading the answer's body: %v", err)
					}
					checkEnvelope(t, "oversize body", rawResult{status: res.StatusCode, header: res.Header, body: b}, 413, "request_too_large")
					if !res.Close {
						t.Errorf("the answer keeps the connection open after an unread body: %v", res.Header)
					}
					if !sequential {
						c.Close() // ends the writer if the server stopped reading
						<-written
					}
				})
			}
		}
	}
}
