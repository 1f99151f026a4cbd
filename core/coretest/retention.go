package coretest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
)

func testRedact(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	s := e.store(t, "S")
	m := e.memory(t, s.ID, "/secret", "password=hunter2")
	_, err := e.svc.RedactVersion(e.ctx, s.ID, m.VersionID)
	wantCode(t, "RedactVersion(current version of a live memory)", err, trove.EINVALID)
	if !strings.Contains(trove.ErrorMessage(err), "update or delete the memory first") {
		t.Fatalf("message %q does not say what to do", trove.ErrorMessage(err))
	}
	u, err := e.svc.UpdateMemory(e.ctx, s.ID, m.ID, trove.UpdateMemoryParams{Content: ptr("password=<redacted>")})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := e.svc.GetVersion(e.ctx, s.ID, m.VersionID, "")
	r, err := e.svc.RedactVersion(e.ctx, s.ID, m.VersionID)
	if err != nil {
		t.Fatal(err)
	}
	if r.RedactedAt == nil {
		t.Fatal("RedactedAt not set")
	}
	want := &trove.MemoryVersion{
		ID: m.VersionID, StoreID: s.ID, MemoryID: m.ID, Operation: trove.OpCreated,
		CreatedBy: before.CreatedBy, CreatedAt: before.CreatedAt,
		RedactedAt: r.RedactedAt, RedactedBy: &trove.Actor{Type: trove.ActorAPI, APIKeyID: e.keyID},
		Seq: before.Seq, // redaction changes a version; it does not add one
		// and keeps its hashes, so the chain stays verifiable
		LeafHash: before.LeafHash, ChainHash: before.ChainHash,
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Fatalf("redacted version (-want +got):\n%s", diff)
	}
	for _, view := range []trove.View{"", trove.ViewFull, trove.ViewBasic} {
		g, err := e.svc.GetVersion(e.ctx, s.ID, m.VersionID, view)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, g); diff != "" {
			t.Fatalf("GetVersion(redacted, %q) (-want +got):\n%s", view, diff)
		}
	}
	full, _ := e.svc.ListVersions(e.ctx, s.ID, trove.ListVersionsParams{View: trove.ViewFull})
	for _, v := range full.Data {
		if v.ID == m.VersionID && (v.Content != nil || v.Path != nil) {
			t.Fatalf("listed redacted version has content or path: %+v", v)
		}
	}
	// Idempotent, with the first redaction's time and actor.
	e.clock.Advance(time.Hour)
	ctx2, _ := e.keyCtx(t, wsA)
	again, err := e.svc.RedactVersion(ctx2, s.ID, m.VersionID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Fatalf("second redaction changed the version (-want +got):\n%s", diff)
	}
	// The live memory is untouched.
	if got, _ := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); *got.Content != "password=<redacted>" || got.VersionID != u.VersionID {
		t.Fatalf("memory after redaction = %+v", got)
	}
	// After deleting the memory its last content version can be redacted.
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, u.VersionID); err != nil {
		t.Fatalf("RedactVersion(last version of a deleted memory): %v", err)
	}
	_, err = e.svc.RedactVersion(e.ctx, s.ID, "memver_missing")
	wantCode(t, "RedactVersion(unknown)", err, trove.ENOTFOUND)
	o := e.store(t, "O")
	_, err = e.svc.RedactVersion(e.ctx, o.ID, u.VersionID)
	wantCode(t, "RedactVersion(version of another store)", err, trove.ENOTFOUND)
}

// --- retention ----------------------------------------------------------

func testRetention(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{VersionRetention: 30 * 24 * time.Hour})
	s := e.store(t, "S")
	day := 24 * time.Hour
	m1 := e.memory(t, s.ID, "/m1", "v1")
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, m1.ID, trove.UpdateMemoryParams{Content: ptr("v2")}); err != nil {
		t.Fatal(err)
	}
	m2 := e.memory(t, s.ID, "/m2", "x")
	if err := e.svc.DeleteMemory(e.ctx, s.ID, m2.ID, ""); err != nil {
		t.Fatal(err)
	}
	m3 := e.memory(t, s.ID, "/m3", "never changed")
	e.clock.Advance(20 * day)
	latest, err := e.svc.UpdateMemory(e.ctx, s.ID, m1.ID, trove.UpdateMemoryParams{Content: ptr("v3")})
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.svc.PurgeExpiredVersions(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("purge before expiry: %d, %v", n, err)
	}
	e.clock.Advance(11 * day)
	n, err = e.svc.PurgeExpiredVersions(context.Background())
	if err != nil || n != 4 {
		t.Fatalf("purge: %d, %v; want 4 (m1 v1, v2; m2 created, deleted)", n, err)
	}
	var left []string
	for _, v := range e.allVersions(t, s.ID, trove.ListVersionsParams{}) {
		left = append(left, v.ID)
	}
	if diff := cmp.Diff([]string{latest.VersionID, m3.VersionID}, left); diff != "" {
		t.Fatalf("versions left (-want +got):\n%s", diff)
	}
	e.clock.Advance(365 * day)
	n, err = e.svc.PurgeExpiredVersions(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("purge of current versions: %d, %v", n, err)
	}
	for _, m := range []*trove.Memory{m1, m3} {
		if _, err := e.svc.GetMemory(e.ctx, s.ID, m.ID, ""); err != nil {
			t.Fatalf("memory lost to retention: %v", err)
		}
	}
	// RunRetention stops with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.svc.RunRetention(ctx, time.Hour); err == nil {
		t.Fatal("RunRetention returned nil after cancellation")
	}
}
