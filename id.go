package trove

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"time"
)

// ID prefixes, as the API uses them.
const (
	PrefixStore     = "memstore_"
	PrefixMemory    = "mem_"
	PrefixVersion   = "memver_"
	PrefixSession   = "sesn_"
	PrefixAPIKey    = "apikey_"
	PrefixRequest   = "req_"
	PrefixWorkspace = "wrkspc_"
	PrefixEvent     = "sevt_"
	PrefixDream     = "drm_"
	PrefixAgent     = "agent_"
	PrefixEnv       = "env_"
	PrefixEnvKey    = "envkey_"
	PrefixWork      = "work_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idLen is the number of base62 digits that hold 128 bits.
const idLen = 22

var idMu sync.Mutex
var lastHi, lastLo uint64

// NewID returns prefix followed by 22 base62 characters encoding 48 bits of
// Unix milliseconds from now and 80 random bits. IDs from one process are
// strictly increasing, and IDs sort by creation time across processes to the
// millisecond, so they double as pagination tiebreaks.
func NewID(prefix string, now time.Time) string {
	var rnd [10]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		panic("trove: crypto/rand failed: " + err.Error())
	}
	ms := uint64(now.UnixMilli()) & (1<<48 - 1)
	hi := ms<<16 | uint64(binary.BigEndian.Uint16(rnd[:2]))
	lo := binary.BigEndian.Uint64(rnd[2:])
	idMu.Lock()
	if hi>>16 <= lastHi>>16 { // same or earlier millisecond: stay monotonic
		hi, lo = lastHi, lastLo+1
		if lo == 0 {
			hi++
		}
	}
	lastHi, lastLo = hi, lo
	idMu.Unlock()
	return prefix + encode128(hi, lo)
}

// encode128 writes (hi, lo) as a fixed-width base62 number, so that string
// order equals numeric order.
func encode128(hi, lo uint64) string {
	var out [idLen]byte
	for i := idLen - 1; i >= 0; i-- {
		qh, r := bits.Div64(0, hi, 62)
		ql, rl := bits.Div64(r, lo, 62)
		hi, lo = qh, ql
		out[i] = base62[rl]
	}
	return string(out[:])
}

// NewLeaseOwner returns a name for a runner's leases (dreams, session runs,
// webhook deliveries): host, process ID and 8 random hex digits, unique
// across the nodes and restarts that share a database.
func NewLeaseOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
