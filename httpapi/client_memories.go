package httpapi

import (
	"context"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
)

// checkPathUTF8 refuses a path that JSON would alter, with the error
// trove.ValidatePath gives it.
func checkPathUTF8(p string) error {
	if !utf8.ValidString(p) {
		return trove.Errorf(trove.EINVALID, "path must be valid UTF-8")
	}
	return nil
}

// CreateMemory creates a memory; it never overwrites (EPATHCONFLICT). Content
// or a path that is not valid UTF-8 is refused before anything is sent.
func (c *Client) CreateMemory(ctx context.Context, storeID string, p trove.CreateMemoryParams) (*trove.Memory, error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	// JSON would replace each invalid byte with U+FFFD: refuse instead,
	// with core's error, so a remote store and a local one answer alike.
	if err := trove.CheckContentUTF8(p.Content); err != nil {
		return nil, err
	}
	if err := checkPathUTF8(p.Path); err != nil {
		return nil, err
	}
	m, err := c.sdk.Beta.MemoryStores.Memories.New(ctx, storeID, anthropic.BetaMemoryStoreMemoryNewParams{
		Path:    p.Path,
		Content: anthropic.String(p.Content),
		View:    anthropic.BetaManagedAgentsMemoryView(p.View),
	})
	if err != nil {
		return nil, translate(err)
	}
	return memoryFromWire(m), nil
}

// GetMemory returns a live memory; "" view means full, as in core.
func (c *Client) GetMemory(ctx context.Context, storeID, memoryID string, view trove.View) (*trove.Memory, error) {
	if storeID == "" || memoryID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory %q not found", memoryID)
	}
	m, err := c.sdk.Beta.MemoryStores.Memories.Get(ctx, memoryID, anthropic.BetaMemoryStoreMemoryGetParams{
		MemoryStoreID: storeID,
		View:          anthropic.BetaManagedAgentsMemoryView(view),
	})
	if err != nil {
		return nil, translate(err)
	}
	return memoryFromWire(m), nil
}

// UpdateMemory changes content, path or both, under an optional
// precondition.
func (c *Client) UpdateMemory(ctx context.Context, storeID, memoryID string, p trove.UpdateMemoryParams) (*trove.Memory, error) {
	if storeID == "" || memoryID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory %q not found", memoryID)
	}
	params := anthropic.BetaMemoryStoreMemoryUpdateParams{
		MemoryStoreID: storeID,
		View:          anthropic.BetaManagedAgentsMemoryView(p.View),
	}
	if p.Content != nil {
		if err := trove.CheckContentUTF8(*p.Content); err != nil {
			return nil, err
		}
		params.Content = anthropic.String(*p.Content)
	}
	if p.Path != nil {
		if err := checkPathUTF8(*p.Path); err != nil {
			return nil, err
		}
		params.Path = anthropic.String(*p.Path)
	}
	if p.PreconditionSHA256 != "" {
		params.Precondition = anthropic.BetaManagedAgentsPreconditionParam{ContentSha256: anthropic.String(p.PreconditionSHA256)}
	}
	m, err := c.sdk.Beta.MemoryStores.Memories.Update(ctx, memoryID, params)
	if err != nil {
		return nil, translate(err)
	}
	return memoryFromWire(m), nil
}

// ListMemories lists memories and folded prefixes in ascending path order.
// The request is the SDK's List, byte for byte (query, beta header,
// retries, error envelope → translate), but the SDK hands back the page's
// body (WithResponseBodyInto) and decodeMemoryPage decodes it: the SDK's
// reflective decoder, with its per-field metadata, was most of the CPU of
// a first `trove sync` (BenchmarkSyncProcessVsSDK).
func (c *Client) ListMemories(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	var body []byte
	_, err := c.sdk.Beta.MemoryStores.Memories.List(ctx, storeID, listMemoriesParams(p), option.WithResponseBodyInto(&body))
	if err != nil {
		return nil, translate(err)
	}
	return decodeMemoryPage(body)
}

// listMemoriesParams is p as the SDK's List takes it.
func listMemoriesParams(p trove.ListMemoriesParams) anthropic.BetaMemoryStoreMemoryListParams {
	return anthropic.BetaMemoryStoreMemoryListParams{
		Depth:      optInt(p.Depth),
		Limit:      optInt(p.Limit),
		Page:       optString(p.Cursor),
		PathPrefix: optString(p.PathPrefix),
		View:       anthropic.BetaManagedAgentsMemoryView(p.View),
	}
}

// DeleteMemory deletes a memory, if expectedSHA256 is "" or matches.
func (c *Client) DeleteMemory(ctx context.Context, storeID, memoryID, expectedSHA256 string) error {
	if storeID == "" || memoryID == "" {
		return trove.Errorf(trove.ENOTFOUND, "memory %q not found", memoryID)
	}
	_, err := c.sdk.Beta.MemoryStores.Memories.Delete(ctx, memoryID, anthropic.BetaMemoryStoreMemoryDeleteParams{
		MemoryStoreID:         storeID,
		ExpectedContentSha256: optString(expectedSHA256),
	})
	return translate(err)
}

// GetVersion returns a version; "" view means full, as in core.
func (c *Client) GetVersion(ctx context.Context, storeID, versionID string, view trove.View) (*trove.MemoryVersion, error) {
	if storeID == "" || versionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory version %q not found", versionID)
	}
	v, err := c.sdk.Beta.MemoryStores.MemoryVersions.Get(ctx, versionID, anthropic.BetaMemoryStoreMemoryVersionGetParams{
		MemoryStoreID: storeID,
		View:          anthropic.BetaManagedAgentsMemoryView(view),
	})
	if err != nil {
		return nil, translate(err)
	}
	return versionFromWire(v), nil
}

// ListVersions lists versions newest first.
func (c *Client) ListVersions(ctx context.Context, storeID string, p trove.ListVersionsParams) (*trove.Page[trove.MemoryVersion], error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	page, err := c.sdk.Beta.MemoryStores.MemoryVersions.List(ctx, storeID, anthropic.BetaMemoryStoreMemoryVersionListParams{
		APIKeyID:         optString(p.APIKeyID),
		CreatedAtGte:     optTime(p.CreatedAt.GTE),
		CreatedAtLte:     optTime(p.CreatedAt.LTE),
		Limit:            optInt(p.Limit),
		MemoryID:         optString(p.MemoryID),
		Page:             optString(p.Cursor),
		ServiceAccountID: optString(p.ServiceAccountID),
		SessionID:        optString(p.SessionID),
		Operation:        anthropic.BetaManagedAgentsMemoryVersionOperation(p.Operation),
		View:             anthropic.BetaManagedAgentsMemoryView(p.View),
	})
	if err != nil {
		return nil, translate(err)
	}
	out := &trove.Page[trove.MemoryVersion]{Data: make([]trove.MemoryVersion, len(page.Data)), NextPage: page.NextPage}
	for i := range page.Data {
		out.Data[i] = *versionFromWire(&page.Data[i])
	}
	return out, nil
}

// RedactVersion redacts a version (idempotent).
func (c *Client) RedactVersion(ctx context.Context, storeID, versionID string) (*trove.MemoryVersion, error) {
	if storeID == "" || versionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory version %q not found", versionID)
	}
	v, err := c.sdk.Beta.MemoryStores.MemoryVersions.Redact(ctx, versionID, anthropic.BetaMemoryStoreMemoryVersionRedactParams{MemoryStoreID: storeID})
	if err != nil {
		return nil, translate(err)
	}
	return versionFromWire(v), nil
}
