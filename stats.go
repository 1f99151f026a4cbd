package trove

import "context"

// StoreStats are a store's stored counters, kept by the database in the
// same transaction as every write (never counted per request), next to the
// limits they are checked against.
type StoreStats struct {
	StoreID string
	// MemoryCount is the number of live memories (Limits.MaxMemoriesPerStore).
	MemoryCount int
	// ContentBytes is the sum of the live memories' content sizes, UTF-8
	// bytes (Limits.MaxStoreBytes).
	ContentBytes int64
	// VersionCount is the number of retained versions, redacted ones
	// included (Limits.MaxVersionsPerStore).
	VersionCount int64
	// Limits in force for this store: MaxMemories, MaxBytes, MaxVersions.
	MaxMemories int
	MaxBytes    int64
	MaxVersions int64
}

// StoreStatsService is Trove's extension that reads a store's counters
// (core, and httpapi.Client over GET /trove/v1/memory_stores/{id}/stats).
type StoreStatsService interface {
	// StoreStats returns the counters of a store the caller can read;
	// ENOTFOUND otherwise.
	StoreStats(ctx context.Context, storeID string) (*StoreStats, error)
}
