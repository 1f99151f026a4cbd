package dreamrun

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/trovehq/trove/storage/sqlite/sqlitetest"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
)

// TestTranscriptMemoryBounded (issue 22 item 11): reading a 15 MB
// transcript page by page keeps no copy of it: what the reader holds
// after every page has been read is its index, not the text; and the
// pages, concatenated, are exactly the transcript rendered whole.
func TestTranscriptMemoryBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := core.New(db, core.Options{})
	k, _, err := svc.CreateKey(ctx, "wrkspc_t", "t")
	if err != nil {
		t.Fatal(err)
	}
	owner := &trove.Principal{WorkspaceID: "wrkspc_t", Actor: trove.NewActor(trove.ActorAPI, k.ID)}
	pctx := trove.WithPrincipal(ctx, owner)
	se, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	var evs []trove.NewSessionEvent
	for i := range 60 {
		text := fmt.Sprintf("event %d ", i) + strings.Repeat("café ", 42_000) // ~250 kB, multi-byte runes
		b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
		evs = append(evs, trove.NewSessionEvent{Type: trove.EventUserMessage, Body: string(b)})
	}
	if _, err := svc.AppendEvents(pctx, se.ID, evs); err != nil {
		t.Fatal(err)
	}
	// The reference: the whole text, rendered at once.
	var want strings.Builder
	want.WriteString(transcriptHeader(se.ID))
	// (A listing's pages end at trove.MaxEventPageBytes: follow them.)
	for cursor := ""; ; {
		all, err := svc.ListEvents(pctx, se.ID, trove.ListEventsParams{Limit: 100, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for i := range all.Data {
			want.WriteString(eventLine(&all.Data[i]))
		}
		if cursor = all.NextPage; cursor == "" {
			break
		}
	}
	wantText := want.String()
	want = strings.Builder{}

	ts := &transcripts{svc: svc, principal: owner, sessions: []string{se.ID}, pageBytes: 96000}
	input := func(off int) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"session_id":%q,"offset":%d}`, se.ID, off))
	}
	next := regexp.MustCompile(`call read_transcript with offset (\d+) for the next page\]$`)
	var before, after runtime.MemStats
	got := 0 // bytes of pages checked against wantText
	off, pages := 0, 0
	for {
		page, isErr := ts.read(ctx, input(off))
		if isErr {
			t.Fatalf("read at %d: %s", off, page)
		}
		pages++
		m := next.FindStringSubmatchIndex(page)
		if m == nil {
			end := strings.LastIndex(page, "\n[end of transcript: ")
			if page[:end] != wantText[off:] {
				t.Fatalf("the last page, at %d, differs from the transcript", off)
			}
			got += end
			break
		}
		cut := strings.LastIndex(page, "\n[transcript continues: ")
		n, _ := strconv.Atoi(page[m[2]:m[3]])
		if page[:cut] != wantText[off:n] {
			t.Fatalf("the page at %d differs from the transcript", off)
		}
		got += cut
		if n <= off || n-off > ts.pageBytes {
			t.Fatalf("page at %d says the next is at %d", off, n)
		}
		off = n
	}
	// What the reader retains: the heap with it, less the heap without it.
	runtime.GC()
	runtime.ReadMemStats(&before)
	ix := ts.index[se.ID]
	ts = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(before.HeapAlloc) - int64(after.HeapAlloc)
	t.Logf("%d bytes of transcript in %d pages; the reader holds %.2f MiB after reading them all", len(wantText), pages, float64(held)/(1<<20))
	if got != len(wantText) {
		t.Fatalf("the pages hold %d bytes of the %d-byte transcript", got, len(wantText))
	}
	if held > 3<<20 {
		t.Fatalf("the reader holds %.1f MiB after reading a %.1f MiB transcript: want bounded, not a copy", float64(held)/(1<<20), float64(len(wantText))/(1<<20))
	}
	if ix == nil || len(ix.marks) > len(wantText)/markEvery+2 {
		t.Fatalf("index: %+v", ix)
	}
}
