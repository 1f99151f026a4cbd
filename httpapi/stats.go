package httpapi

import (
	"context"
	"net/http"

	"github.com/trovehq/trove"
)

// A store's counters and limits, Trove's extension (trove.StoreStatsService):
//
//	GET /trove/v1/memory_stores/{id}/stats
//
// {"type": "memory_store_stats", "memory_store_id", "memory_count",
// "content_bytes", "version_count", "limits": {"memories", "content_bytes",
// "versions"}}: stored counters, one row read whatever the store's size.
// The /v1 store object carries none of them (the SDK's type has no such
// fields).

type wireStoreStatsLimits struct {
	Memories     int   `json:"memories"`
	ContentBytes int64 `json:"content_bytes"`
	Versions     int64 `json:"versions"`
}

type wireStoreStats struct {
	Type          string               `json:"type"`
	MemoryStoreID string               `json:"memory_store_id"`
	MemoryCount   int                  `json:"memory_count"`
	ContentBytes  int64                `json:"content_bytes"`
	VersionCount  int64                `json:"version_count"`
	Limits        wireStoreStatsLimits `json:"limits"`
}

func storeStatsToWire(st *trove.StoreStats) wireStoreStats {
	return wireStoreStats{
		Type: "memory_store_stats", MemoryStoreID: st.StoreID,
		MemoryCount: st.MemoryCount, ContentBytes: st.ContentBytes, VersionCount: st.VersionCount,
		Limits: wireStoreStatsLimits{Memories: st.MaxMemories, ContentBytes: st.MaxBytes, Versions: st.MaxVersions},
	}
}

// WireStoreStats is a store's counters as the server answers them (the
// trove CLI's -o json).
func WireStoreStats(st *trove.StoreStats) any { return storeStatsToWire(st) }

func (s *Server) addStatsRoutes(h trove.StoreStatsService, add func(method, path string, kind routeKind, fn handlerFunc)) {
	add("GET", historyBase+"/stats", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		st, err := h.StoreStats(r.Context(), r.PathValue("memory_store_id"))
		if err != nil {
			return err
		}
		return s.ok(w, storeStatsToWire(st))
	})
}

var _ trove.StoreStatsService = (*Client)(nil)

// StoreStats reads a store's counters on the server.
func (c *Client) StoreStats(ctx context.Context, storeID string) (*trove.StoreStats, error) {
	var w wireStoreStats
	if err := c.histGet(ctx, storeID, "/stats", nil, &w); err != nil {
		return nil, err
	}
	return &trove.StoreStats{
		StoreID: w.MemoryStoreID, MemoryCount: w.MemoryCount, ContentBytes: w.ContentBytes, VersionCount: w.VersionCount,
		MaxMemories: w.Limits.Memories, MaxBytes: w.Limits.ContentBytes, MaxVersions: w.Limits.Versions,
	}, nil
}
