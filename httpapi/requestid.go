package httpapi

import (
	"math/rand/v2"
	"time"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// requestIDLen is the length of a request ID: "req_", 9 base62 digits of
// Unix milliseconds and 13 random base62 digits, the length and alphabet
// of trove.NewID's IDs.
const requestIDLen = 4 + 9 + 13

// newRequestID returns a request ID ("req_…", like trove.NewID's IDs: 22
// base62 characters after the prefix). The first 9 characters are the Unix
// milliseconds of now, fixed width, so that request IDs sort by time across
// processes to the millisecond; the other 13 are random (about 77 bits).
//
// It is cheaper than trove.NewID, which every request would otherwise pay
// for: the random bits come from math/rand/v2's runtime source (a per-thread
// ChaCha8 stream seeded by the operating system; no system call, no lock)
// and every division is by a constant. A request ID names a request in logs
// and error envelopes; it is no secret, and IDs of one process need not
// increase within a millisecond.
func newRequestID(now time.Time) string {
	var b [requestIDLen]byte
	copy(b[:], "req_")
	ms := uint64(now.UnixMilli()) & (1<<48 - 1) // 62^9 > 2^48
	for i := 4 + 9 - 1; i >= 4; i-- {
		b[i] = base62[ms%62]
		ms /= 62
	}
	r := rand.Uint64()
	for i := 13; i < 13+10; i++ { // 62^10 < 2^64
		b[i] = base62[r%62]
		r /= 62
	}
	r = rand.Uint64()
	for i := 13 + 10; i < requestIDLen; i++ {
		b[i] = base62[r%62]
		r /= 62
	}
	return string(b[:])
}
