package httpapi_test

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func wantCode(t *testing.T, what string, err error, code string) *trove.Error {
	t.Helper()
	var te *trove.Error
	if !errors.As(err, &te) || te.Code != code {
		t.Fatalf("%s: error = %v, want a *trove.Error %s", what, err, code)
	}
	return te
}

func ptr[T any](v T) *T { return &v }

// TestClientRoundTrip drives trove.Services through httpapi.Client and
// checks every result equals what core returns directly for the same object.
func TestClientRoundTrip(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		var svc trove.Services = httpapi.NewClient(e.url, e.key, httpapi.WithWorkspaceID(testWorkspace))
		ctx := context.Background()
		local := e.ctx()

		st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: "Client", Description: "d", Metadata: map[string]string{"a": "1", "b": "2"}})
		if err != nil {
			t.Fatal(err)
		}
		same := func(what string, got, want any, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: local: %v", what, err)
			}
			// Seq and the hashes are not on the /v1 wire: the client's
			// versions carry 0 and nil.
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(trove.MemoryVersion{}, "Seq", "LeafHash", "ChainHash")); diff != "" {
				t.Errorf("%s: client vs core (-core +client):\n%s", what, diff)
			}
		}
		direct, err := e.svc.GetStore(local, st.ID)
		same("CreateStore", st, direct, err)

		up, err := svc.UpdateStore(ctx, st.ID, trove.UpdateStoreParams{Name: ptr("Renamed"), Metadata: map[string]*string{"a": nil, "c": ptr("3")}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"b": "2", "c": "3"}, up.Metadata); diff != "" || up.Name != "Renamed" {
			t.Errorf("UpdateStore merge patch (-want +got):\n%s name=%q", diff, up.Name)
		}
		direct, err = e.svc.GetStore(local, st.ID)
		same("UpdateStore", up, direct, err)

		m, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a/b.md", Content: "hello"})
		if err != nil {
			t.Fatal(err)
		}
		if m.Content != nil {
			t.Errorf("CreateMemory basic view: content = %q, want nil", *m.Content)
		}
		got, err := svc.GetMemory(ctx, st.ID, m.ID, "")
		dm, derr := e.svc.GetMemory(local, st.ID, m.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		same("GetMemory", got, dm, derr)

		_, err = svc.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("x"), PreconditionSHA256: sha("nope")})
		wantCode(t, "stale precondition", err, trove.EPRECONDITION)
		m2, err := svc.UpdateMemory(ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("world"), PreconditionSHA256: sha("hello"), View: trove.ViewFull})
		if err != nil || *m2.Content != "world" {
			t.Fatalf("UpdateMemory = %v, %v", m2, err)
		}
		_, err = svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a", Content: "x"})
		te := wantCode(t, "overlapping create", err, trove.EPATHCONFLICT)
		if te.ConflictingPath != "/a/b.md" || te.ConflictingMemoryID != m.ID {
			t.Errorf("conflict = %q %q, want /a/b.md %s", te.ConflictingPath, te.ConflictingMemoryID, m.ID)
		}
		if _, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/c.md", Content: ""}); err != nil {
			t.Fatal(err)
		}

		page, err := svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{Depth: 1})
		dpage, derr := e.svc.ListMemories(local, st.ID, trove.ListMemoriesParams{Depth: 1})
		if err != nil {
			t.Fatal(err)
		}
		same("ListMemories depth 1", page, dpage, derr)
		page, err = svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{View: trove.ViewFull, Limit: 1})
		dpage, derr = e.svc.ListMemories(local, st.ID, trove.ListMemoriesParams{View: trove.ViewFull, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		same("ListMemories full limit 1", page, dpage, derr)
		if page.NextPage == "" {
			t.Errorf("ListMemories limit 1 of 2: no next page")
		}

		vpage, err := svc.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: m.ID})
		dv, derr := e.svc.ListVersions(local, st.ID, trove.ListVersionsParams{MemoryID: m.ID})
		if err != nil {
			t.Fatal(err)
		}
		same("ListVersions", vpage, dv, derr)
		red, err := svc.RedactVersion(ctx, st.ID, m.VersionID)
		if err != nil {
			t.Fatal(err)
		}
		dver, derr := e.svc.GetVersion(local, st.ID, m.VersionID, trove.ViewFull)
		same("RedactVersion", red, dver, derr)
		if red.Path != nil || red.Content != nil || red.SizeBytes != nil || red.SHA256 != nil || red.RedactedAt == nil || red.RedactedBy == nil {
			t.Errorf("redacted version = %+v", red)
		}
		if err := svc.DeleteMemory(ctx, st.ID, m.ID, sha("nope")); trove.ErrorCode(err) != trove.EPRECONDITION {
			t.Errorf("DeleteMemory stale = %v, want EPRECONDITION", err)
		}
		if err := svc.DeleteMemory(ctx, st.ID, m.ID, sha("world")); err != nil {
			t.Fatal(err)
		}
		_, err = svc.GetMemory(ctx, st.ID, m.ID, trove.ViewFull)
		wantCode(t, "deleted memory", err, trove.ENOTFOUND)

		many := map[string]string{}
		for _, k := range []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17"} {
			many[k] = k
		}
		_, err = svc.CreateStore(ctx, trove.CreateStoreParams{Name: "x", Metadata: many})
		if te := wantCode(t, "17 metadata keys", err, trove.EINVALID); te.DetailCode != "invalid_metadata" {
			t.Errorf("DetailCode = %q, want invalid_metadata", te.DetailCode)
		}

		stores, err := svc.ListStores(ctx, trove.ListStoresParams{IncludeArchived: true})
		dstores, derr := e.svc.ListStores(local, trove.ListStoresParams{IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		same("ListStores", stores, dstores, derr)
		if _, err := svc.ArchiveStore(ctx, st.ID); err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteStore(ctx, st.ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.GetStore(ctx, st.ID)
		wantCode(t, "deleted store", err, trove.ENOTFOUND)

		_, err = httpapi.NewClient(e.url, "trove_sk_bad").ListStores(ctx, trove.ListStoresParams{})
		wantCode(t, "bad key", err, trove.EUNAUTHENTICATED)
		_, err = httpapi.NewClient(e.url, e.key, httpapi.WithWorkspaceID("wrkspc_other")).ListStores(ctx, trove.ListStoresParams{})
		wantCode(t, "other workspace", err, trove.EFORBIDDEN)

		// An unreachable server is EUNAVAILABLE.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, err = httpapi.NewClient("http://"+addr, e.key, httpapi.WithMaxRetries(0)).GetStore(ctx, "memstore_x")
		wantCode(t, "unreachable", err, trove.EUNAVAILABLE)
		_, err = httpapi.NewClient("http://"+addr, e.key).GetSession(ctx, "sesn_x")
		wantCode(t, "unreachable sessions", err, trove.EUNAVAILABLE)
	})
}

// TestSessions covers /trove/v1/sessions through the Client and the scope
// of a session token.
func TestSessions(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		ctx := context.Background()
		admin := httpapi.NewClient(e.url, e.key)
		rw, err := admin.CreateStore(ctx, trove.CreateStoreParams{Name: "User Preferences", Description: "prefs"})
		if err != nil {
			t.Fatal(err)
		}
		ro, err := admin.CreateStore(ctx, trove.CreateStoreParams{Name: "Reference"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := admin.CreateStore(ctx, trove.CreateStoreParams{Name: "Other"})
		if err != nil {
			t.Fatal(err)
		}
		refMem, err := admin.CreateMemory(ctx, ro.ID, trove.CreateMemoryParams{Path: "/ref.md", Content: "ref"})
		if err != nil {
			t.Fatal(err)
		}

		sess, token, err := admin.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{
			{StoreID: rw.ID, Instructions: "Check before starting any task."},
			{StoreID: ro.ID, Access: trove.AccessReadOnly},
		}})
		if err != nil {
			t.Fatalf("CreateSession: %v", err)
		}
		if token == "" || len(sess.Stores) != 2 || sess.EndedAt != nil {
			t.Fatalf("session = %+v, token %q", sess, token)
		}
		wantStores := []trove.SessionStore{
			{StoreID: rw.ID, Access: trove.AccessReadWrite, Name: "User Preferences", Description: "prefs", Instructions: "Check before starting any task.", MountPath: "/mnt/memory/user-preferences"},
			{StoreID: ro.ID, Access: trove.AccessReadOnly, Name: "Reference", MountPath: "/mnt/memory/reference"},
		}
		if diff := cmp.Diff(wantStores, sess.Stores); diff != "" {
			t.Errorf("session stores (-want +got):\n%s", diff)
		}
		got, err := admin.GetSession(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(sess, got); diff != "" {
			t.Errorf("GetSession (-create +get):\n%s", diff)
		}
		list, err := admin.ListSessions(ctx, trove.ListSessionsParams{StoreID: ro.ID})
		if err != nil || len(list.Data) != 1 || list.Data[0].ID != sess.ID {
			t.Errorf("ListSessions by store = %+v, %v", list, err)
		}
		list, err = admin.ListSessions(ctx, trove.ListSessionsParams{StoreID: other.ID})
		if err != nil || len(list.Data) != 0 {
			t.Errorf("ListSessions by unattached store = %+v, %v", list, err)
		}

		// The session token: reads attached stores, writes only read_write
		// ones, as a session actor; no store management, no sessions.
		agent := httpapi.NewClient(e.url, token)
		if _, err := agent.GetMemory(ctx, ro.ID, refMem.ID, ""); err != nil {
			t.Errorf("session reads read_only store: %v", err)
		}
		m, err := agent.CreateMemory(ctx, rw.ID, trove.CreateMemoryParams{Path: "/learned.md", Content: "x"})
		if err != nil {
			t.Fatalf("session writes read_write store: %v", err)
		}
		v, err := agent.GetVersion(ctx, rw.ID, m.VersionID, "")
		if err != nil || v.CreatedBy == nil || v.CreatedBy.Type != trove.ActorSession || v.CreatedBy.SessionID != sess.ID {
			t.Errorf("session write's version = %+v, %v", v, err)
		}
		if _, err := agent.CreateMemory(ctx, ro.ID, trove.CreateMemoryParams{Path: "/x.md", Content: "x"}); trove.ErrorCode(err) != trove.EFORBIDDEN {
			t.Errorf("session write to read_only store = %v, want EFORBIDDEN", err)
		}
		if _, err := agent.GetStore(ctx, other.ID); trove.ErrorCode(err) != trove.ENOTFOUND && trove.ErrorCode(err) != trove.EFORBIDDEN {
			t.Errorf("session reads unattached store = %v, want ENOTFOUND or EFORBIDDEN", err)
		}
		if _, err := agent.CreateStore(ctx, trove.CreateStoreParams{Name: "nope"}); trove.ErrorCode(err) != trove.EFORBIDDEN {
			t.Errorf("session creates store = %v, want EFORBIDDEN", err)
		}
		if _, _, err := agent.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: rw.ID}}}); trove.ErrorCode(err) != trove.EFORBIDDEN {
			t.Errorf("session creates session = %v, want EFORBIDDEN", err)
		}

		// Bad session requests.
		if _, _, err := admin.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: "memstore_nope"}}}); trove.ErrorCode(err) != trove.ENOTFOUND {
			t.Errorf("attach unknown store = %v, want ENOTFOUND", err)
		}
		if _, _, err := admin.CreateSession(ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: rw.ID, Access: "admin"}}}); trove.ErrorCode(err) != trove.EINVALID {
			t.Errorf("bad access = %v, want EINVALID", err)
		}
		for _, body := range []string{`{"resources":[{"type":"file","memory_store_id":"x"}]}`, `{"resources":[{"type":"memory_store"}]}`, `{"resources":[],"agent":"x"}`, `{`} {
			res := e.do(t, rawReq{method: "POST", path: "/trove/v1/sessions", body: body})
			checkEnvelope(t, "session body "+body, res, 400, "invalid_request_error")
		}
		_, err = admin.GetSession(ctx, "sesn_nope")
		wantCode(t, "unknown session", err, trove.ENOTFOUND)

		ended, err := admin.EndSession(ctx, sess.ID)
		if err != nil || ended.EndedAt == nil {
			t.Fatalf("EndSession = %+v, %v", ended, err)
		}
		if _, err := agent.GetMemory(ctx, rw.ID, m.ID, ""); trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
			t.Errorf("ended session's token = %v, want EUNAUTHENTICATED", err)
		}
		again, err := admin.EndSession(ctx, sess.ID)
		if err != nil || !again.EndedAt.Equal(*ended.EndedAt) {
			t.Errorf("EndSession again = %+v, %v (idempotent)", again, err)
		}
	})
}
