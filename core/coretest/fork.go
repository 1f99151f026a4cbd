package coretest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

// testFork forks a store as of a past moment and checks that the fork
// holds exactly the source's memories then (redacted ones skipped), each
// first version naming its source version, that later writes to either
// store leave the other alone, and who may fork.
func testFork(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	src := e.store(t, "source")
	for i := range 30 {
		e.memory(t, src.ID, fmt.Sprintf("/notes/n%02d", i), fmt.Sprintf("note %d", i))
	}
	gone := e.memory(t, src.ID, "/gone", "to be deleted")
	secret := e.memory(t, src.ID, "/secret", "password=hunter2")
	cleaned := "password=<removed>"
	if _, err := e.svc.UpdateMemory(e.ctx, src.ID, secret.ID, trove.UpdateMemoryParams{Content: &cleaned}); err != nil {
		t.Fatal(err)
	}
	asOf := trove.Moment{VersionID: secret.VersionID} // /secret still holds the password here
	if _, err := e.svc.RedactVersion(e.ctx, src.ID, secret.VersionID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteMemory(e.ctx, src.ID, gone.ID, ""); err != nil {
		t.Fatal(err)
	}
	want, err := e.svc.ListMemoriesAsOf(e.ctx, src.ID, asOf, trove.ListMemoriesParams{Limit: 100, View: trove.ViewBasic})
	if err != nil {
		t.Fatal(err)
	}

	res, err := e.svc.ForkStore(e.ctx, src.ID, trove.ForkStoreParams{Name: "fork", AsOf: asOf})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != 31 || !cmp.Equal(res.Skipped, []string{secret.ID}) || res.Seq != want.Seq {
		t.Fatalf("ForkStore = copied %d, skipped %v, seq %d; want 31 (30 notes and /gone), [%s] (redacted), %d", res.Copied, res.Skipped, res.Seq, secret.ID, want.Seq)
	}
	fork := res.Store
	if fork.Name != "fork" || fork.ID == src.ID {
		t.Fatalf("fork store = %+v", fork)
	}
	type mem struct{ Path, Content string }
	contents := func(storeID string) []mem {
		var out []mem
		for _, it := range e.allMemories(t, e.ctx, storeID, trove.ListMemoriesParams{Limit: 20, View: trove.ViewFull}) {
			out = append(out, mem{it.Memory.Path, *it.Memory.Content})
		}
		return out
	}
	var wantMems []mem
	origins := map[string]string{} // path → source version
	for _, v := range want.Data {
		if v.RedactedAt != nil {
			continue
		}
		full, err := e.svc.GetVersion(e.ctx, src.ID, v.ID, trove.ViewFull)
		if err != nil {
			t.Fatal(err)
		}
		wantMems = append(wantMems, mem{*v.Path, *full.Content})
		origins[*v.Path] = v.ID
	}
	forked := contents(fork.ID)
	if diff := cmp.Diff(wantMems, forked); diff != "" {
		t.Fatalf("fork contents (-source as of the moment +fork):\n%s", diff)
	}
	for _, v := range e.allVersions(t, fork.ID, trove.ListVersionsParams{}) {
		if v.Operation != trove.OpCreated || v.Origin == nil || v.Origin.StoreID != src.ID || v.Origin.VersionID != origins[*v.Path] {
			t.Errorf("fork version %s of %s: op %s origin %+v; want created from %s/%s", v.ID, *v.Path, v.Operation, v.Origin, src.ID, origins[*v.Path])
		}
		if v.CreatedBy == nil || v.CreatedBy.APIKeyID != e.keyID {
			t.Errorf("fork version %s created by %+v, want the caller", v.ID, v.CreatedBy)
		}
	}
	if rep, err := e.svc.VerifyStore(e.ctx, fork.ID); err != nil || !rep.OK || rep.Verified != 31 {
		t.Errorf("VerifyStore(fork) = %+v, %v; want OK with 31 versions", rep, err)
	}

	// Independence: writes to the source do not reach the fork and back.
	first := e.allMemories(t, e.ctx, src.ID, trove.ListMemoriesParams{Limit: 1})[0].Memory
	changed := "changed in the source"
	if _, err := e.svc.UpdateMemory(e.ctx, src.ID, first.ID, trove.UpdateMemoryParams{Content: &changed}); err != nil {
		t.Fatal(err)
	}
	e.memory(t, src.ID, "/new-in-source", "x")
	if diff := cmp.Diff(forked, contents(fork.ID)); diff != "" {
		t.Errorf("a write to the source changed the fork (-before +after):\n%s", diff)
	}
	srcBefore := contents(src.ID)
	fm := e.allMemories(t, e.ctx, fork.ID, trove.ListMemoriesParams{Limit: 1})[0].Memory
	if err := e.svc.DeleteMemory(e.ctx, fork.ID, fm.ID, ""); err != nil {
		t.Fatal(err)
	}
	e.memory(t, fork.ID, "/new-in-fork", "y")
	if diff := cmp.Diff(srcBefore, contents(src.ID)); diff != "" {
		t.Errorf("a write to the fork changed the source (-before +after):\n%s", diff)
	}

	// Who may fork, and bad input.
	sctx, _, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: src.ID})
	_, err = e.svc.ForkStore(sctx, src.ID, trove.ForkStoreParams{Name: "x"})
	wantCode(t, "ForkStore by a session", err, trove.EFORBIDDEN)
	_, err = e.svc.ForkStore(e.ctxB, src.ID, trove.ForkStoreParams{Name: "x"})
	wantCode(t, "ForkStore of another workspace's store", err, trove.ENOTFOUND)
	_, err = e.svc.ForkStore(e.ctx, src.ID, trove.ForkStoreParams{Name: ""})
	wantCode(t, "ForkStore without a name", err, trove.EINVALID)
	_, err = e.svc.ForkStore(e.ctx, src.ID, trove.ForkStoreParams{Name: "x", AsOf: trove.Moment{Seq: 10000}})
	wantCode(t, "ForkStore as of a version beyond the newest", err, trove.EINVALID)
	// The fork of now equals the source now.
	now, err := e.svc.ForkStore(e.ctx, src.ID, trove.ForkStoreParams{Name: "now"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contents(src.ID), contents(now.Store.ID)); diff != "" {
		t.Errorf("fork as of now (-source +fork):\n%s", diff)
	}
}

// testForkLargeContents: a fork whose source contents pass what one read
// of the source holds (16 MiB: 170 memories of 100 kB) copies every
// memory, each with its content, across the reads.
func testForkLargeContents(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	src := e.store(t, "large")
	const n = 170
	body := strings.Repeat("0123456789", 10_000)
	for i := range n {
		e.memory(t, src.ID, fmt.Sprintf("/m%03d", i), fmt.Sprintf("%03d", i)+body[3:])
	}
	res, err := e.svc.ForkStore(e.ctx, src.ID, trove.ForkStoreParams{Name: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Copied != n || len(res.Skipped) != 0 {
		t.Fatalf("fork copied %d (skipped %v), want %d", res.Copied, res.Skipped, n)
	}
	for _, i := range []int{0, n / 2, n - 1} {
		p := fmt.Sprintf("/m%03d", i)
		v, err := e.svc.GetMemoryAsOf(e.ctx, res.Store.ID, trove.Moment{}, p, trove.ViewFull)
		if err != nil || v.Content == nil || *v.Content != fmt.Sprintf("%03d", i)+body[3:] {
			t.Fatalf("fork's %s: %v; want the source's content", p, err)
		}
	}
}
