package trove

import "time"

// Limits are the documented limits of the memory stores API, as
// configuration. DefaultLimits gives the documented defaults.
type Limits struct {
	MaxContentBytes      int           // memory content, bytes (102,400)
	MaxMemoriesPerStore  int           // live memories in one store (10,000)
	MaxPathBytes         int           // memory path, UTF-8 bytes (1,024)
	MaxPathSegments      int           // memory path segments (20)
	MaxNameChars         int           // store name, characters (255)
	MaxDescriptionChars  int           // store description, characters (1,024)
	MaxMetadataPairs     int           // store metadata pairs (16)
	MaxMetadataKeyChars  int           // metadata key, characters (64)
	MaxMetadataValChars  int           // metadata value, characters (512)
	MaxStoresPerSession  int           // attached stores (8)
	MaxInstructionsChars int           // attach instructions, characters (4,096)
	DefaultPageSize      int           // list default (20)
	MaxPageSize          int           // list maximum (100)
	MaxFullPageSize      int           // list maximum with view=full (20)
	VersionRetention     time.Duration // versions older than this may be deleted (30 days)
	MaxEventBytes        int           // one session event's JSON, bytes (262,144)
	MaxEventsPerAppend   int           // events in one append (100)
	MaxSessionEvents     int           // events in one session's transcript (10,000)
	MaxSessionEventBytes int64         // a session's transcript, bytes (16 MiB)
	MaxDreamSessions     int           // input sessions of a dream (100)
	MaxDreamModelChars   int           // a dream's model id, characters (256)
	// MaxStoresPerWorkspace bounds a workspace's stores, archived ones
	// included (deleted ones are gone): creating or forking one more is
	// EINVALID (1,000).
	MaxStoresPerWorkspace int
	// MaxStoreBytes bounds the sum of the content sizes of a store's live
	// memories (Memory.SizeBytes, UTF-8 bytes; paths, metadata and the
	// versions' content are not counted): a create or an update that would
	// take the store past it is EINVALID, one that shrinks or keeps the
	// size is not (100 MB read as 100 MiB, 104,857,600, the way 100 kB is
	// 102,400).
	MaxStoreBytes int
	// MaxVersionsPerStore bounds a store's retained versions (redacted ones
	// included, the ones retention deleted not): a write that would add a
	// version past it is refused with EINVALID, retention frees room
	// (250,000).
	MaxVersionsPerStore int
}

// DefaultLimits returns the documented defaults.
func DefaultLimits() Limits {
	return Limits{
		MaxContentBytes:      102400,
		MaxMemoriesPerStore:  10000,
		MaxPathBytes:         1024,
		MaxPathSegments:      20,
		MaxNameChars:         255,
		MaxDescriptionChars:  1024,
		MaxMetadataPairs:     16,
		MaxMetadataKeyChars:  64,
		MaxMetadataValChars:  512,
		MaxStoresPerSession:  8,
		MaxInstructionsChars: 4096,
		DefaultPageSize:      20,
		MaxPageSize:          100,
		MaxFullPageSize:      20,
		VersionRetention:     30 * 24 * time.Hour,
		MaxEventBytes:        256 << 10,
		MaxEventsPerAppend:   100,
		MaxSessionEvents:     10000,
		MaxSessionEventBytes: 16 << 20,
		MaxDreamSessions:     100,
		MaxDreamModelChars:   256,

		MaxStoresPerWorkspace: 1000,
		MaxStoreBytes:         100 << 20,
		MaxVersionsPerStore:   250000,
	}
}
