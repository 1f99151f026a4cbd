package trove

import (
	"crypto/sha256"
	"encoding/binary"
)

// HashSize is the length in bytes of a version's LeafHash and ChainHash.
const HashSize = sha256.Size

// GenesisHash is the chain hash "before" a store's first chained version:
// 32 zero bytes.
var GenesisHash = make([]byte, HashSize)

// VersionOrigin names where a forked memory's first version came from: a
// version of another store (ForkStore).
type VersionOrigin struct {
	StoreID   string
	VersionID string
}

// VersionLeafHash is the canonical hash of one version's identity and
// content: SHA-256 over a domain tag followed by length-prefixed fields in
// this order: ID, StoreID, MemoryID, Operation, Path (with a presence byte),
// SHA256 (with a presence byte), the creating actor's type and ID (with a
// presence byte), CreatedAt in Unix microseconds (8 bytes big-endian) and
// the Origin's store and version IDs (with a presence byte). The content
// itself is covered through SHA256. Drivers compute it when a version is
// inserted and keep it beside the version, so that a redacted version
// (whose path and hash are gone) still has the leaf its chain link used;
// the verifier recomputes it for every version whose fields are still there.
func VersionLeafHash(v *MemoryVersion) []byte {
	b := make([]byte, 0, 256)
	b = append(b, "trove/version/v1"...)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	opt := func(s *string) {
		if s == nil {
			b = append(b, 0)
			return
		}
		b = append(b, 1)
		str(*s)
	}
	str(v.ID)
	str(v.StoreID)
	str(v.MemoryID)
	str(string(v.Operation))
	opt(v.Path)
	opt(v.SHA256)
	if v.CreatedBy == nil {
		b = append(b, 0)
	} else {
		id, _ := v.CreatedBy.ID()
		b = append(b, 1)
		str(string(v.CreatedBy.Type))
		str(id)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(v.CreatedAt.UnixMicro()))
	if v.Origin == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		str(v.Origin.StoreID)
		str(v.Origin.VersionID)
	}
	sum := sha256.Sum256(b)
	return sum[:]
}

// VersionChainHash links a version to the previous version of its store:
// SHA-256(prev ‖ seq as 8 bytes big-endian ‖ leaf), where prev is the chain
// hash of the version with the next lower Seq (GenesisHash when prev is nil:
// the store's first chained version). A driver may compute it in SQL (the
// PostgreSQL driver does: sha256(prev || int8send(seq) || leaf)); the
// storage conformance suite checks every driver's stored value against this
// function.
func VersionChainHash(prev []byte, seq int64, leaf []byte) []byte {
	if prev == nil {
		prev = GenesisHash
	}
	h := sha256.New()
	h.Write(prev)
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(seq)))
	h.Write(leaf)
	return h.Sum(nil)
}
