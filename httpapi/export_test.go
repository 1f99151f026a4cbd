package httpapi

import (
	"context"

	"github.com/trovehq/trove"
)

// ListMemoriesSDK is ListMemories as it was before decodeMemoryPage: the
// SDK's List decodes the page (its reflective decoder) and memoryFromWire
// converts each memory. Tests compare the two paths.
func (c *Client) ListMemoriesSDK(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	page, err := c.sdk.Beta.MemoryStores.Memories.List(ctx, storeID, listMemoriesParams(p))
	if err != nil {
		return nil, translate(err)
	}
	out := &trove.Page[trove.MemoryListItem]{Data: make([]trove.MemoryListItem, len(page.Data)), NextPage: page.NextPage}
	for i, it := range page.Data {
		switch it.Type {
		case "memory":
			m := it.AsMemory()
			out.Data[i].Memory = memoryFromWire(&m)
		case "memory_prefix":
			out.Data[i].Prefix = &trove.MemoryPrefix{Path: it.Path}
		default:
			return nil, trove.Errorf(trove.EINTERNAL, "list item of unknown type %q", it.Type)
		}
	}
	return out, nil
}
