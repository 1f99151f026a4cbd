package coretest

import (
	"fmt"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// testAudit checks VerifyStore on clean histories: a new store, writes of
// every kind, a redaction, and retention deleting old versions (the check
// restarts after each gap, which it lists). Breaks made by altering rows
// directly are checked by each driver's own tests, which can reach the
// rows.
func testAudit(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{VersionRetention: time.Hour})
	s := e.store(t, "audited")
	rep, err := e.svc.VerifyStore(e.ctx, s.ID)
	if err != nil || !rep.OK || rep.Verified != 0 || rep.HeadSeq != 0 || rep.Head != "" {
		t.Fatalf("VerifyStore(empty) = %+v, %v", rep, err)
	}
	a := e.memory(t, s.ID, "/a", "one")
	b := e.memory(t, s.ID, "/b", "two")
	two := "two, changed"
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, b.ID, trove.UpdateMemoryParams{Content: &two}); err != nil {
		t.Fatal(err)
	}
	moved := "/c"
	if _, err := e.svc.UpdateMemory(e.ctx, s.ID, a.ID, trove.UpdateMemoryParams{Path: &moved}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RedactVersion(e.ctx, s.ID, b.VersionID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteMemory(e.ctx, s.ID, a.ID, ""); err != nil {
		t.Fatal(err)
	}
	rep, err = e.svc.VerifyStore(e.ctx, s.ID)
	if err != nil || !rep.OK || rep.Verified != 5 || rep.Redacted != 1 || rep.HeadSeq != 5 || len(rep.Gaps) != 0 || len(rep.Head) != 64 {
		t.Fatalf("VerifyStore(clean, one redaction) = %+v, %v; want OK, 5 verified, 1 redacted", rep, err)
	}
	// Retention deletes versions 1, 2, 4, 5 (old, none current of a live
	// memory) but keeps 3 (b's current): gaps before and after it.
	e.clock.Advance(2 * time.Hour)
	if n, err := e.svc.PurgeExpiredVersions(e.ctx); err != nil || n != 4 {
		t.Fatalf("PurgeExpiredVersions = %d, %v; want 4", n, err)
	}
	rep, err = e.svc.VerifyStore(e.ctx, s.ID)
	if err != nil || !rep.OK || rep.Verified != 1 || len(rep.Gaps) != 2 || rep.GapsTotal != 2 || rep.Gaps[0] != [2]int64{1, 2} || rep.Gaps[1] != [2]int64{4, 5} {
		t.Fatalf("VerifyStore(after retention) = %+v, %v; want OK, 1 verified, gaps 1-2 and 4-5", rep, err)
	}
	e.memory(t, s.ID, "/d", "after retention")
	rep, err = e.svc.VerifyStore(e.ctx, s.ID)
	if err != nil || !rep.OK || rep.Verified != 2 || rep.HeadSeq != 6 {
		t.Fatalf("VerifyStore(write after retention) = %+v, %v; want OK, 2 verified, head 6", rep, err)
	}
	// More versions than one read holds (VerifyStore reads a bounded
	// number at a time): every one verified, across the reads.
	d := e.memory(t, s.ID, "/e", "v0")
	for i := range 70 {
		c := fmt.Sprint("v", i+1)
		if _, err := e.svc.UpdateMemory(e.ctx, s.ID, d.ID, trove.UpdateMemoryParams{Content: &c}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = e.svc.VerifyStore(e.ctx, s.ID)
	if err != nil || !rep.OK || rep.Verified != 73 || rep.HeadSeq != 77 {
		t.Fatalf("VerifyStore(77 versions) = %+v, %v; want OK, 73 verified, head 77", rep, err)
	}
	_, err = e.svc.VerifyStore(e.ctxB, s.ID)
	wantCode(t, "VerifyStore of another workspace's store", err, trove.ENOTFOUND)
}
