package httpapi_test

import (
	"bytes"
	"context"
	stdjson "encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// dreamFixture is a store and two sessions with transcripts.
type dreamFixture struct {
	store    *trove.Store
	sessions []string
}

func newDreamFixture(t *testing.T, e *testEnv) dreamFixture {
	t.Helper()
	st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "prefs"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 2 {
		se, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, se.ID)
	}
	return dreamFixture{store: st, sessions: ids}
}

func dreamParams(storeID string, sessions ...string) anthropic.BetaDreamNewParams {
	return anthropic.BetaDreamNewParams{
		Inputs: []anthropic.BetaDreamInputUnionParam{
			{OfMemoryStore: &anthropic.BetaDreamMemoryStoreInputParam{MemoryStoreID: storeID}},
			{OfSessions: &anthropic.BetaDreamSessionsInputParam{SessionIDs: sessions}},
		},
		Model: anthropic.BetaDreamNewParamsModelUnion{OfString: anthropic.String("claude-sonnet-4-6")},
	}
}

func TestSDKDreams(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) { testSDKDreams(t, newEnv(t, tr)) })
}

func testSDKDreams(t *testing.T, e *testEnv) {
	ctx := context.Background()
	c := e.sdk()
	f := newDreamFixture(t, e)

	// Create: pending, inputs echoed with the sessions sorted, model in
	// object form, outputs empty, every key present.
	var res *http.Response
	d, err := c.Beta.Dreams.New(ctx, dreamParams(f.store.ID, f.sessions[1], f.sessions[0]), option.WithResponseInto(&res))
	if err != nil {
		t.Fatalf("Dreams.New: %v", err)
	}
	if !strings.HasPrefix(d.ID, "drm_") || d.Status != anthropic.BetaDreamStatusPending || d.Model.ID != "claude-sonnet-4-6" ||
		d.Model.Speed != "standard" || len(d.Outputs) != 0 || d.OutputBehavior.Type != "create_new" || d.JSON.SessionID.Valid() ||
		d.JSON.Instructions.Valid() || d.JSON.EndedAt.Valid() || d.JSON.ArchivedAt.Valid() || d.JSON.Error.Valid() {
		t.Fatalf("created dream = %s", d.RawJSON())
	}
	if d.Inputs[0].MemoryStoreID != f.store.ID || !cmp.Equal(d.Inputs[1].SessionIDs, []string{f.sessions[0], f.sessions[1]}) {
		t.Fatalf("inputs = %+v", d.Inputs)
	}
	for _, k := range []string{"type", "id", "inputs", "outputs", "status", "created_at", "ended_at", "archived_at", "error", "model", "instructions", "session_id", "usage", "output_behavior"} {
		if _, ok := rawKeys(t, d.RawJSON())[k]; !ok {
			t.Errorf("dream lacks %q: %s", k, d.RawJSON())
		}
	}
	// The object form of model and instructions.
	p := dreamParams(f.store.ID, f.sessions[0])
	p.Model = anthropic.BetaDreamNewParamsModelUnion{OfBetaDreamModelConfig: &anthropic.BetaDreamModelConfigParam{ID: "claude-opus-4-8", Speed: "standard"}}
	p.Instructions = anthropic.String("Keep the glossary as is.")
	d2, err := c.Beta.Dreams.New(ctx, p)
	if err != nil || d2.Model.ID != "claude-opus-4-8" || d2.Instructions != "Keep the glossary as is." {
		t.Fatalf("Dreams.New(model object, instructions) = %v, %v", d2, err)
	}
	got, err := c.Beta.Dreams.Get(ctx, d.ID, anthropic.BetaDreamGetParams{})
	if err != nil || got.ID != d.ID {
		t.Fatalf("Dreams.Get = %v, %v", got, err)
	}

	// Every refusal of create.
	archived, _ := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "old"})
	if _, err := e.svc.ArchiveStore(e.ctx(), archived.ID); err != nil {
		t.Fatal(err)
	}
	many := make([]string, 101)
	for i := range many {
		many[i] = "sesn_" + strings.Repeat("x", i+1)
	}
	raw := func(body string) func() error {
		return func() error {
			return c.Post(ctx, "v1/dreams", nil, nil, option.WithRequestBody("application/json", []byte(body)),
				option.WithHeader("anthropic-beta", httpapi.BetaDreaming))
		}
	}
	sdkNew := func(p anthropic.BetaDreamNewParams) func() error {
		return func() error { _, err := c.Beta.Dreams.New(ctx, p); return err }
	}
	withP := func(mod func(*anthropic.BetaDreamNewParams)) anthropic.BetaDreamNewParams {
		p := dreamParams(f.store.ID, f.sessions[0])
		mod(&p)
		return p
	}
	s0 := f.sessions[0]
	refusals := []struct {
		name   string
		call   func() error
		status int
		typ    string
	}{
		{"unknown store", sdkNew(dreamParams("memstore_nope", s0)), 404, "not_found_error"},
		{"unknown session", sdkNew(dreamParams(f.store.ID, "sesn_nope")), 404, "not_found_error"},
		{"archived store", sdkNew(dreamParams(archived.ID, s0)), 400, "invalid_request_error"},
		{"no sessions", sdkNew(dreamParams(f.store.ID)), 400, "invalid_request_error"},
		{"101 sessions", sdkNew(dreamParams(f.store.ID, many...)), 400, "invalid_request_error"},
		{"duplicate session", sdkNew(dreamParams(f.store.ID, s0, s0)), 400, "invalid_request_error"},
		{"no store input", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) { p.Inputs = p.Inputs[1:] })), 400, "invalid_request_error"},
		{"two store inputs", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) { p.Inputs = append(p.Inputs, p.Inputs[0]) })), 400, "invalid_request_error"},
		{"two sessions inputs", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) { p.Inputs = append(p.Inputs, p.Inputs[1]) })), 400, "invalid_request_error"},
		{"empty model", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) {
			p.Model = anthropic.BetaDreamNewParamsModelUnion{OfString: anthropic.String("")}
		})), 400, "invalid_request_error"},
		{"model of 257 characters", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) {
			p.Model = anthropic.BetaDreamNewParamsModelUnion{OfString: anthropic.String(strings.Repeat("m", 257))}
		})), 400, "invalid_request_error"},
		{"fast speed", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) {
			p.Model = anthropic.BetaDreamNewParamsModelUnion{OfBetaDreamModelConfig: &anthropic.BetaDreamModelConfigParam{ID: "m", Speed: "fast"}}
		})), 400, "invalid_request_error"},
		{"instructions of 4097 characters", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) {
			p.Instructions = anthropic.String(strings.Repeat("ü", 4097))
		})), 400, "invalid_request_error"},
		{"empty instructions", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) { p.Instructions = anthropic.String("") })), 400, "invalid_request_error"},
		{"update_existing of another store", sdkNew(withP(func(p *anthropic.BetaDreamNewParams) {
			p.OutputBehavior = anthropic.BetaOutputBehaviorUnionParam{OfUpdateExisting: &anthropic.BetaOutputBehaviorUpdateExistingParam{MemoryStoreID: archived.ID}}
		})), 400, "invalid_request_error"},
		{"no model", raw(`{"inputs":[{"type":"memory_store","memory_store_id":"` + f.store.ID + `"},{"type":"sessions","session_ids":["` + s0 + `"]}]}`), 400, "invalid_request_error"},
		{"model a number", raw(`{"model":7,"inputs":[]}`), 400, "invalid_request_error"},
		{"unknown member", raw(`{"model":"m","inputs":[],"priority":1}`), 400, "invalid_request_error"},
		{"unknown input type", raw(`{"model":"m","inputs":[{"type":"files"}]}`), 400, "invalid_request_error"},
		{"unknown output behaviour", raw(`{"model":"m","inputs":[{"type":"memory_store","memory_store_id":"` + f.store.ID + `"},{"type":"sessions","session_ids":["` + s0 + `"]}],"output_behavior":{"type":"overwrite"}}`), 400, "invalid_request_error"},
		{"no body", raw(``), 400, "invalid_request_error"},
	}
	for _, r := range refusals {
		t.Run("create/"+r.name, func(t *testing.T) { wantAPIError(t, r.call(), r.status, r.typ) })
	}
	// No dreaming beta: refused (the memory beta does not grant access).
	_, err = c.Beta.Dreams.Get(ctx, d.ID, anthropic.BetaDreamGetParams{}, option.WithHeaderDel("anthropic-beta"),
		option.WithHeader("anthropic-beta", httpapi.BetaManagedAgents))
	wantAPIError(t, err, 400, "invalid_request_error")
	// A session credential cannot create dreams.
	_, token, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Beta.Dreams.New(ctx, dreamParams(f.store.ID, s0), option.WithAPIKey(token))
	wantAPIError(t, err, 403, "permission_error")

	// update_existing: 409 while another in-place dream has not stopped.
	inPlace := withP(func(p *anthropic.BetaDreamNewParams) {
		p.OutputBehavior = anthropic.BetaOutputBehaviorUnionParam{OfUpdateExisting: &anthropic.BetaOutputBehaviorUpdateExistingParam{MemoryStoreID: f.store.ID}}
	})
	ip, err := c.Beta.Dreams.New(ctx, inPlace)
	if err != nil || ip.OutputBehavior.Type != "update_existing" || ip.OutputBehavior.MemoryStoreID != f.store.ID {
		t.Fatalf("Dreams.New(update_existing) = %v, %v", ip, err)
	}
	var res409 *http.Response
	_, err = c.Beta.Dreams.New(ctx, inPlace, option.WithResponseInto(&res409))
	wantAPIError(t, err, 409, "conflict_error")
	if res409.Header.Get("x-should-retry") != "false" {
		t.Errorf("409 x-should-retry = %q, want false", res409.Header.Get("x-should-retry"))
	}

	// Cancel: pending → canceled; canceled → unchanged; completed/failed →
	// 400; unknown → 404.
	cd, err := c.Beta.Dreams.Cancel(ctx, ip.ID, anthropic.BetaDreamCancelParams{})
	if err != nil || cd.Status != anthropic.BetaDreamStatusCanceled || !cd.JSON.EndedAt.Valid() {
		t.Fatalf("Dreams.Cancel(pending) = %v, %v", cd, err)
	}
	again, err := c.Beta.Dreams.Cancel(ctx, ip.ID, anthropic.BetaDreamCancelParams{})
	if err != nil || again.Status != anthropic.BetaDreamStatusCanceled || !again.EndedAt.Equal(cd.EndedAt) {
		t.Fatalf("Dreams.Cancel(canceled) = %v, %v; want unchanged", again, err)
	}
	ip2, err := c.Beta.Dreams.New(ctx, inPlace)
	if err != nil {
		t.Fatalf("update_existing after the first was canceled before it ran: %v", err)
	}
	claimed, err := e.svc.ClaimDream(ctx, "test-runner", time.Minute)
	if err != nil || claimed.ID != d.ID {
		t.Fatalf("ClaimDream = %v, %v", claimed, err)
	}
	// (The next claim takes d2, the oldest pending one left.)
	if _, err := e.svc.FinishDream(ctx, d.ID, "test-runner", trove.DreamCompleted, nil, nil); err != nil {
		t.Fatal(err)
	}
	claimed, _ = e.svc.ClaimDream(ctx, "test-runner", time.Minute)
	if _, err := e.svc.FinishDream(ctx, claimed.ID, "test-runner", trove.DreamFailed, &trove.DreamError{Type: trove.DreamErrTimeout, Message: "too slow"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{d.ID, claimed.ID} {
		_, err = c.Beta.Dreams.Cancel(ctx, id, anthropic.BetaDreamCancelParams{})
		wantAPIError(t, err, 400, "invalid_request_error")
	}
	_, err = c.Beta.Dreams.Cancel(ctx, "drm_nope", anthropic.BetaDreamCancelParams{})
	wantAPIError(t, err, 404, "not_found_error")
	failed, _ := c.Beta.Dreams.Get(ctx, claimed.ID, anthropic.BetaDreamGetParams{})
	if failed.Error.Type != "timeout" || failed.Error.Message != "too slow" {
		t.Errorf("failed dream error = %s", failed.JSON.Error.Raw())
	}

	// Archive: terminal only, idempotent, status unchanged; 404 unknown.
	_, err = c.Beta.Dreams.Archive(ctx, ip2.ID, anthropic.BetaDreamArchiveParams{})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.Dreams.Archive(ctx, "drm_nope", anthropic.BetaDreamArchiveParams{})
	wantAPIError(t, err, 404, "not_found_error")
	a1, err := c.Beta.Dreams.Archive(ctx, d.ID, anthropic.BetaDreamArchiveParams{})
	if err != nil || a1.Status != anthropic.BetaDreamStatusCompleted || !a1.JSON.ArchivedAt.Valid() {
		t.Fatalf("Dreams.Archive = %v, %v", a1, err)
	}
	a2, err := c.Beta.Dreams.Archive(ctx, d.ID, anthropic.BetaDreamArchiveParams{})
	if err != nil || !a2.ArchivedAt.Equal(a1.ArchivedAt) {
		t.Fatalf("Dreams.Archive again = %v, %v", a2, err)
	}
	_, err = c.Beta.Dreams.Archive(ctx, d.ID, anthropic.BetaDreamArchiveParams{}, option.WithAPIKey(token))
	wantAPIError(t, err, 403, "permission_error")

	// List: newest first, archived hidden, statuses[] and created_at
	// filters, paging with the SDK's auto-pager.
	ids := func(p anthropic.BetaDreamListParams) []string {
		var out []string
		it := c.Beta.Dreams.ListAutoPaging(ctx, p)
		for it.Next() {
			out = append(out, it.Current().ID)
		}
		if err := it.Err(); err != nil {
			t.Fatalf("Dreams.List(%+v): %v", p, err)
		}
		return out
	}
	all := ids(anthropic.BetaDreamListParams{Limit: anthropic.Int(1), IncludeArchived: anthropic.Bool(true)})
	if len(all) != 4 || all[len(all)-1] != d.ID {
		t.Fatalf("all dreams = %v, want 4 ending with the first", all)
	}
	if got := ids(anthropic.BetaDreamListParams{}); len(got) != 3 || contains(got, d.ID) {
		t.Errorf("default list = %v, want the 3 not archived", got)
	}
	if got := ids(anthropic.BetaDreamListParams{Statuses: []anthropic.BetaDreamStatus{"failed", "canceled"}}); len(got) != 2 {
		t.Errorf("failed+canceled = %v, want 2", got)
	}
	if got := ids(anthropic.BetaDreamListParams{CreatedAtGt: anthropic.Time(d.CreatedAt), IncludeArchived: anthropic.Bool(true)}); len(got) != 3 {
		t.Errorf("created after the first = %v, want 3", got)
	}
	if got := ids(anthropic.BetaDreamListParams{CreatedAtLt: anthropic.Time(d2.CreatedAt), IncludeArchived: anthropic.Bool(true)}); !cmp.Equal(got, []string{d.ID}) {
		t.Errorf("created before the second = %v, want the first", got)
	}
	_, err = c.Beta.Dreams.List(ctx, anthropic.BetaDreamListParams{Statuses: []anthropic.BetaDreamStatus{"dozing"}})
	wantAPIError(t, err, 400, "invalid_request_error")

	// httpapi.Client speaks the same endpoints through the SDK.
	hc := httpapi.NewClient(e.url, e.key, httpapi.WithHTTPClient(e.client()))
	cd2, err := hc.GetDream(ctx, claimed.ID)
	if err != nil || cd2.Status != trove.DreamFailed || cd2.Error == nil || cd2.Error.Type != trove.DreamErrTimeout || cd2.InputStoreID != f.store.ID {
		t.Fatalf("Client.GetDream = %+v, %v", cd2, err)
	}
	_, err = hc.CancelDream(ctx, claimed.ID)
	if trove.ErrorCode(err) != trove.EINVALID {
		t.Fatalf("Client.CancelDream(failed) = %v, want EINVALID", err)
	}
	_, err = hc.CreateDream(ctx, trove.CreateDreamParams{StoreID: f.store.ID, SessionIDs: []string{s0}, Model: "m",
		OutputBehavior: trove.OutputUpdateExisting, OutputStoreID: f.store.ID})
	if trove.ErrorCode(err) != trove.ECONFLICT {
		t.Fatalf("Client.CreateDream(update_existing, busy) = %v, want ECONFLICT", err)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestEventsHTTP(t *testing.T) {
	e := newEnv(t, netHTTP)
	ctx := context.Background()
	se, token, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	other, _, _ := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
	sc := httpapi.NewClient(e.url, token)
	evs, err := sc.AppendEvents(ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"I prefer tea now"}]}`},
		{Type: trove.EventAgentToolUse, Body: `{"name":"memory","input":{"command":"view","path":"/memories"}}`},
	})
	if err != nil || len(evs) != 2 || !strings.HasPrefix(evs[0].ID, "sevt_") || evs[0].ProcessedAt.IsZero() {
		t.Fatalf("AppendEvents = %+v, %v", evs, err)
	}
	// The raw wire shape: a Managed Agents event object.
	req, _ := http.NewRequest("GET", e.url+"/trove/v1/sessions/"+se.ID+"/events?limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var page struct {
		Data     []map[string]any `json:"data"`
		NextPage *string          `json:"next_page"`
	}
	if err := stdUnmarshal(body, &page); err != nil || res.StatusCode != 200 || len(page.Data) != 1 || page.NextPage == nil {
		t.Fatalf("GET events = %d %s", res.StatusCode, body)
	}
	ev := page.Data[0]
	if ev["type"] != "user.message" || ev["id"] != evs[0].ID || ev["processed_at"] == nil || ev["content"] == nil {
		t.Fatalf("event = %v", ev)
	}
	// The workspace key reads through the Client, page by page.
	kc := httpapi.NewClient(e.url, e.key)
	p2, err := kc.ListEvents(ctx, se.ID, trove.ListEventsParams{Limit: 1, Cursor: *page.NextPage})
	if err != nil || len(p2.Data) != 1 || p2.Data[0].Type != trove.EventAgentToolUse || p2.NextPage != "" {
		t.Fatalf("ListEvents page 2 = %+v, %v", p2, err)
	}
	if p2.Data[0].Body != `{"input":{"command":"view","path":"/memories"},"name":"memory"}` {
		t.Errorf("body = %s", p2.Data[0].Body)
	}
	// Refusals: another session's log; an unknown type; not an object.
	_, err = sc.AppendEvents(ctx, other.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage}})
	if trove.ErrorCode(err) != trove.EFORBIDDEN {
		t.Errorf("append to another session = %v, want EFORBIDDEN", err)
	}
	_, err = sc.AppendEvents(ctx, se.ID, []trove.NewSessionEvent{{Type: "session.deleted"}})
	if trove.ErrorCode(err) != trove.EINVALID {
		t.Errorf("unknown type = %v, want EINVALID", err)
	}
	for _, raw := range []string{`{"events":[1]}`, `{"events":[{"content":[]}]}`, `{}`, `{"events":[{"type":"user.message"}],"x":1}`} {
		req, _ := http.NewRequest("POST", e.url+"/trove/v1/sessions/"+se.ID+"/events", bytes.NewReader([]byte(raw)))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || !strings.Contains(string(b), "invalid_request_error") {
			t.Errorf("POST %s = %d %s, want 400", raw, res.StatusCode, b)
		}
	}
}

func stdUnmarshal(b []byte, v any) error { return stdjson.Unmarshal(b, v) }
