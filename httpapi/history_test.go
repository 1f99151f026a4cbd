package httpapi_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// TestClientHistory drives trove.HistoryService through httpapi.Client
// over real HTTP and checks every result equals what core returns directly
// (versions with seq, hashes and origin included), and that errors keep
// their codes across the wire.
func TestClientHistory(t *testing.T) {
	forTransports(t, func(t *testing.T, tr transport) {
		e := newEnv(t, tr)
		c := httpapi.NewClient(e.url, e.key, httpapi.WithWorkspaceID(testWorkspace))
		var h trove.HistoryService = c
		ctx, local := context.Background(), e.ctx()

		st, err := c.CreateStore(ctx, trove.CreateStoreParams{Name: "history"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/a", Content: "one\n"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: "/b", Content: "two\n"}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.UpdateMemory(ctx, st.ID, a.ID, trove.UpdateMemoryParams{Content: ptr("one, changed\n"), Path: ptr("/c")}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.RedactVersion(ctx, st.ID, a.VersionID); err != nil {
			t.Fatal(err)
		}
		same := func(what string, got, want any, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: client vs core (-core +client):\n%s", what, diff)
			}
		}
		for _, at := range []trove.Moment{{}, {Seq: 2}, {VersionID: a.VersionID}} {
			got, err := h.ListMemoriesAsOf(ctx, st.ID, at, trove.ListMemoriesParams{Limit: 1, View: trove.ViewFull})
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.svc.ListMemoriesAsOf(local, st.ID, at, trove.ListMemoriesParams{Limit: 1, View: trove.ViewFull})
			same("ListMemoriesAsOf", got, want, err)
			if got.NextPage != "" {
				got2, err := h.ListMemoriesAsOf(ctx, st.ID, at, trove.ListMemoriesParams{Limit: 1, Cursor: got.NextPage})
				if err != nil {
					t.Fatal(err)
				}
				want2, err := e.svc.ListMemoriesAsOf(local, st.ID, at, trove.ListMemoriesParams{Limit: 1, Cursor: got.NextPage})
				same("ListMemoriesAsOf page 2", got2, want2, err)
			}
		}
		// The time machine's version listing is core's, seq and hashes
		// included, page by page and filtered.
		for _, p := range []trove.ListVersionsParams{{Limit: 2}, {MemoryID: a.ID, View: trove.ViewFull}, {Operation: trove.OpCreated, Limit: 1}} {
			got, err := c.ListVersionsWithSeq(ctx, st.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.svc.ListVersions(local, st.ID, p)
			same("ListVersionsWithSeq", got, want, err)
			for _, v := range got.Data {
				if v.Seq == 0 {
					t.Errorf("ListVersionsWithSeq(%+v): version %s has no seq", p, v.ID)
				}
			}
		}
		got, err := h.GetMemoryAsOf(ctx, st.ID, trove.Moment{Seq: 2}, "/b", "")
		want, werr := e.svc.GetMemoryAsOf(local, st.ID, trove.Moment{Seq: 2}, "/b", "")
		same("GetMemoryAsOf", got, want, werr)
		if err != nil || got.Content == nil || *got.Content != "two\n" || len(got.ChainHash) != trove.HashSize {
			t.Errorf("GetMemoryAsOf = %+v, %v", got, err)
		}
		d, err := h.DiffStore(ctx, st.ID, trove.Moment{Seq: 2}, trove.Moment{})
		wd, werr := e.svc.DiffStore(local, st.ID, trove.Moment{Seq: 2}, trove.Moment{})
		same("DiffStore", d, wd, werr)
		if err != nil || len(d.Changes) != 1 || d.Changes[0].Kind != trove.DiffMoved || !d.Changes[0].Redacted || d.Changes[0].Patch != "" {
			t.Errorf("DiffStore = %+v, %v; want /a moved to /c, redacted before, so no patch", d, err)
		}

		f, err := h.ForkStore(ctx, st.ID, trove.ForkStoreParams{Name: "fork", Description: "d", AsOf: trove.Moment{Seq: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if f.Copied != 1 || f.Seq != 2 || len(f.Skipped) != 1 || f.Store.WorkspaceID != testWorkspace {
			t.Errorf("ForkStore = %+v, store %+v; want /b copied, /a skipped (redacted)", f, f.Store)
		}
		direct, err := e.svc.GetStore(local, f.Store.ID)
		same("ForkStore store", f.Store, direct, err)

		rep, err := h.VerifyStore(ctx, st.ID)
		wrep, werr := e.svc.VerifyStore(local, st.ID)
		if err == nil && werr == nil {
			wrep.VerifiedAt = rep.VerifiedAt // the two calls run at different times
		}
		same("VerifyStore", rep, wrep, werr)
		if !rep.OK || rep.Verified != 3 || rep.Redacted != 1 {
			t.Errorf("VerifyStore = %+v", rep)
		}

		rb, err := h.RollbackActor(ctx, st.ID, trove.RollbackParams{APIKeyID: e.keyID, Since: trove.Moment{Seq: 1}, DryRun: true})
		if err != nil {
			t.Fatalf("RollbackActor dry run over HTTP: %v", err)
		}
		wrb, werr := e.svc.RollbackActor(local, st.ID, trove.RollbackParams{APIKeyID: e.keyID, Since: trove.Moment{Seq: 1}, DryRun: true})
		same("RollbackActor dry run", rb, wrb, werr)
		// /b was created since: delete it; /a would go back to its
		// redacted first version: a conflict.
		if len(rb.Changes) != 1 || rb.Changes[0].Action != trove.RollbackDelete || len(rb.Conflicts) != 1 || rb.Applied {
			t.Errorf("RollbackActor dry run = %+v", rb)
		}

		_, err = h.ListMemoriesAsOf(ctx, st.ID, trove.Moment{Seq: 99}, trove.ListMemoriesParams{})
		wantCode(t, "as of a version beyond the newest", err, trove.EINVALID)
		_, err = h.GetMemoryAsOf(ctx, st.ID, trove.Moment{Seq: 1}, "/b", "")
		wantCode(t, "a memory not yet created", err, trove.ENOTFOUND)
		_, err = h.VerifyStore(ctx, "memstore_missing")
		wantCode(t, "VerifyStore of a missing store", err, trove.ENOTFOUND)
		_, err = h.RollbackActor(ctx, st.ID, trove.RollbackParams{Since: trove.Moment{Seq: 1}})
		wantCode(t, "RollbackActor without an actor", err, trove.EINVALID)
	})
}
