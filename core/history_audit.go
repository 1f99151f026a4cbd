package core

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// verifyPage is how many versions VerifyStore reads at a time, with their
// content: at most 64 × Limits.MaxContentBytes (6.4 MiB) held at once,
// whatever the store's history.
const verifyPage = 64

// VerifyStore recomputes a store's hash chain (trove.HistoryService) and
// reports the first break: for every version in Seq order it checks that
// its content matches its SHA-256, that its leaf hash matches its fields
// (trove.VersionLeafHash; a redacted version's stored leaf is used as
// is), that its chain hash links it to the previous version
// (trove.VersionChainHash), and finally that the store's head is the
// newest version's chain hash. Across a gap in the Seq numbers (retention
// deleted versions) a link cannot be checked: the gap is listed and the
// check restarts from the next version's stored chain hash; but a gap
// right after a version younger than Limits.VersionRetention cannot come
// from retention and is a break. Versions written before the chain existed
// (no hashes) are counted as Unchained. The chain detects a change to
// rows; a rewrite of a whole suffix of the history together with the head
// is detected only against a head recorded elsewhere (AuditReport.Head).
// ENOTFOUND for a store the caller cannot read.
func (s *Service) VerifyStore(ctx context.Context, storeID string) (*trove.AuditReport, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	var out *trove.AuditReport
	err = s.read(ctx, "VerifyStore", func(tx storage.Tx) error {
		out = &trove.AuditReport{StoreID: storeID, Gaps: [][2]int64{}, VerifiedAt: s.now()}
		if _, err := s.readableStore(ctx, tx, pr, storeID); err != nil {
			return err
		}
		headSeq, head, err := tx.StoreHead(ctx, storeID)
		if err != nil {
			return err
		}
		out.HeadSeq = headSeq
		if head != nil {
			out.Head = hex.EncodeToString(head)
		}
		var (
			lastSeq int64
			prev    []byte // chain hash of the version at lastSeq; nil before the first chained one
			last    *trove.MemoryVersion
		)
		fail := func(v *trove.MemoryVersion, format string, args ...any) {
			out.Break = &trove.AuditBreak{VersionID: v.ID, Seq: v.Seq, Problem: fmt.Sprintf(format, args...)}
		}
		for out.Break == nil {
			page, err := tx.VersionScan(ctx, storage.VersionScanParams{StoreID: storeID, AfterSeq: lastSeq, Limit: verifyPage, WithContent: true})
			if err != nil {
				return err
			}
			for i := range page {
				v := &page[i]
				if v.Seq != lastSeq+1 {
					addGap(out, lastSeq+1, v.Seq-1)
					if s.deletedOutsideRetention(last) {
						fail(v, "versions %d to %d before this one are missing, but they were written after version %d (%s), within the retention period: they were deleted outside retention", lastSeq+1, v.Seq-1, lastSeq, last.CreatedAt.Format(time.RFC3339))
						break
					}
				}
				linked := v.Seq == lastSeq+1
				if !s.verifyOne(v, prev, linked, out, fail) {
					break
				}
				lastSeq, prev, last = v.Seq, v.ChainHash, v
			}
			if len(page) < verifyPage {
				break
			}
		}
		if out.Break != nil {
			return nil
		}
		if lastSeq < headSeq {
			addGap(out, lastSeq+1, headSeq)
			if s.deletedOutsideRetention(last) {
				fail(last, "the newest versions %d to %d are missing, but they were written after this version (%s), within the retention period: they were deleted outside retention", lastSeq+1, headSeq, last.CreatedAt.Format(time.RFC3339))
			}
		} else if last != nil && prev != nil && !bytes.Equal(prev, head) {
			fail(last, "the store's recorded head %x is not this newest version's chain hash %x: the newest versions or the head were altered", head, prev)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out.OK = out.Break == nil
	return out, nil
}

// addGap counts a gap and lists it among the first trove.MaxAuditGaps.
func addGap(out *trove.AuditReport, from, to int64) {
	out.GapsTotal++
	if len(out.Gaps) < trove.MaxAuditGaps {
		out.Gaps = append(out.Gaps, [2]int64{from, to})
	}
}

// deletedOutsideRetention reports whether versions missing right after
// last cannot have been deleted by retention: they were written after last
// (seq order is commit order), and last itself is younger than the
// retention period, so retention has not reached them.
func (s *Service) deletedOutsideRetention(last *trove.MemoryVersion) bool {
	return last != nil && last.CreatedAt.After(s.now().Add(-s.limits.VersionRetention))
}

// verifyOne checks one version; it reports a break through fail and
// returns false then. linked says whether the previous Seq exists, so that
// prev (nil: the chain starts here from trove.GenesisHash) is its chain
// hash.
func (s *Service) verifyOne(v *trove.MemoryVersion, prev []byte, linked bool, out *trove.AuditReport, fail func(*trove.MemoryVersion, string, ...any)) bool {
	if v.LeafHash == nil && v.ChainHash == nil {
		if prev != nil {
			fail(v, "version has no hash but follows chained versions: its hashes were removed")
			return false
		}
		out.Unchained++
		return true
	}
	if len(v.LeafHash) != trove.HashSize || len(v.ChainHash) != trove.HashSize {
		fail(v, "version's leaf or chain hash is missing or malformed")
		return false
	}
	if v.RedactedAt != nil {
		if v.Path != nil || v.SHA256 != nil || v.Content != nil || v.SizeBytes != nil {
			fail(v, "version is marked redacted but still has a path, content, size or hash")
			return false
		}
		out.Redacted++
	} else {
		if v.Operation != trove.OpDeleted {
			if v.Content == nil || v.SHA256 == nil || v.SizeBytes == nil {
				fail(v, "version lacks content, size or hash but is not redacted")
				return false
			}
			if got := sha256Hex(*v.Content); got != *v.SHA256 {
				fail(v, "content does not match its sha256 (content hashes to %s, recorded %s): the content was altered", got, *v.SHA256)
				return false
			}
			if len(*v.Content) != *v.SizeBytes {
				fail(v, "content is %d bytes but its recorded size is %d", len(*v.Content), *v.SizeBytes)
				return false
			}
		}
		if leaf := trove.VersionLeafHash(v); !bytes.Equal(leaf, v.LeafHash) {
			fail(v, "leaf hash differs from the version's fields (ids, operation, path, sha256, actor, time, origin): recomputed %x, recorded %x; a field was altered", leaf, v.LeafHash)
			return false
		}
	}
	if linked { // else a gap: restart from this version's stored chain hash
		if want := trove.VersionChainHash(prev, v.Seq, v.LeafHash); !bytes.Equal(want, v.ChainHash) {
			fail(v, "chain hash does not link to the previous version of the store (seq %d): recomputed %x, recorded %x; this version, its seq or the previous version was altered", v.Seq-1, want, v.ChainHash)
			return false
		}
	}
	out.Verified++
	return true
}
