package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/mcpserver"
)

// TestMemoryToolRefusesInvalidUTF8 sends the memory tool raw JSON-RPC whose
// file_text holds bytes that are not UTF-8 (an MCP client may send any
// bytes): the call is an error saying why and nothing is stored — decoding
// would otherwise have replaced each invalid byte with U+FFFD.
func TestMemoryToolRefusesInvalidUTF8(t *testing.T) {
	for name, text := range map[string]string{"latin-1": "caf\xe9", "random bytes": "\xff\xfe\x81abc\xc3"} {
		t.Run(name, func(t *testing.T) {
			svc := newCore(t)
			storeID := newStore(t, svc, "m")
			s, err := mcpserver.New(svc, []mcpserver.Mount{{StoreID: storeID}}, mcpserver.Options{Principal: principal})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			ss, err := s.MCP().Connect(ctx, &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			replies := make(chan map[string]any, 4)
			go func() {
				sc := bufio.NewScanner(outR)
				sc.Buffer(nil, 1<<20)
				for sc.Scan() {
					var m map[string]any
					if json.Unmarshal(sc.Bytes(), &m) == nil {
						replies <- m
					}
				}
			}()
			send := func(line string) {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			reply := func() map[string]any {
				select {
				case m := <-replies:
					return m
				case <-time.After(10 * time.Second):
					t.Fatal("no reply")
					return nil
				}
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			reply()
			send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
			send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory","arguments":{"command":"create","path":"/memories/x.md","file_text":"` + text + `"}}}`)
			got := reply()
			raw, _ := json.Marshal(got)
			if !strings.Contains(string(raw), `"isError":true`) || !strings.Contains(string(raw), "content must be valid UTF-8 text") {
				t.Errorf("tools/call = %s, want an error saying the content must be valid UTF-8 text", raw)
			}
			page, err := svc.ListMemories(trove.WithPrincipal(ctx, principal), storeID, trove.ListMemoriesParams{})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Data) != 0 {
				t.Errorf("the store holds %d memories after the refused call", len(page.Data))
			}
		})
	}
}
