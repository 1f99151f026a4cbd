package httpapi_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// invalidUTF8 are contents JSON would alter (each invalid byte becomes
// U+FFFD): latin-1 text and random bytes.
func invalidUTF8() map[string]string {
	r := rand.New(rand.NewPCG(22, 3))
	b := make([]byte, 1000)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	b[0] = 0xff // never valid, whatever the seed
	return map[string]string{"latin-1": "caf\xe9", "random bytes": string(b)}
}

// TestClientRefusesInvalidUTF8: the client refuses content (and paths) that
// are not valid UTF-8 with exactly the error core gives for them, before
// sending anything, so a remote store and a local one answer alike and
// nothing is stored altered.
func TestClientRefusesInvalidUTF8(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	c := httpapi.NewClient(e.url, e.key, httpapi.WithWorkspaceID(testWorkspace))
	ctx := context.Background()
	st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "utf8"})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/kept.md", Content: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct{ Code, Message string }
	of := func(err error) outcome { return outcome{trove.ErrorCode(err), trove.ErrorMessage(err)} }
	for name, content := range invalidUTF8() {
		if utf8.ValidString(content) {
			t.Fatalf("%s is valid UTF-8", name)
		}
		t.Run(name, func(t *testing.T) {
			_, lerr := e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: "/local.md", Content: content})
			want := of(lerr)
			if want != (outcome{trove.EINVALID, "content must be valid UTF-8 text"}) {
				t.Fatalf("core: %+v", want)
			}
			_, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/x.md", Content: content})
			if diff := cmp.Diff(want, of(err)); diff != "" {
				t.Errorf("create: the client's error differs from core's (-core +client):\n%s", diff)
			}
			_, err = c.UpdateMemory(ctx, st.ID, kept.ID, trove.UpdateMemoryParams{Content: &content})
			if diff := cmp.Diff(want, of(err)); diff != "" {
				t.Errorf("update: the client's error differs from core's (-core +client):\n%s", diff)
			}
			bad := "/caf\xe9.md"
			_, lerr = e.svc.CreateMemory(e.ctx(), st.ID, trove.CreateMemoryParams{Path: bad, Content: "x"})
			_, err = c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: bad, Content: "x"})
			if diff := cmp.Diff(of(lerr), of(err)); diff != "" || of(err).Code != trove.EINVALID {
				t.Errorf("path: the client's error differs from core's (-core +client):\n%s", diff)
			}
		})
	}
	page, err := c.ListMemories(ctx, st.ID, trove.ListMemoriesParams{View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].Memory == nil || *page.Data[0].Memory.Content != "kept" {
		t.Errorf("the store holds %+v, want only /kept.md with its content", page.Data)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, n := range e.counts {
		if k == "POST /v1/memory_stores/"+st.ID+"/memories" && n != 1 {
			t.Errorf("%d creates reached the server, want only the valid one", n)
		}
	}
}
