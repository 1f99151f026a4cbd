package httpapi

import (
	"context"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
)

// CreateStore creates a store. See trove.StoreService.
func (c *Client) CreateStore(ctx context.Context, p trove.CreateStoreParams) (*trove.Store, error) {
	var res *http.Response
	s, err := c.sdk.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{
		Name:        p.Name,
		Description: optString(p.Description),
		Metadata:    p.Metadata,
	}, option.WithResponseInto(&res))
	if err != nil {
		return nil, translate(err)
	}
	return storeFromWire(s, res), nil
}

// GetStore returns a store, archived ones too; ENOTFOUND if absent.
func (c *Client) GetStore(ctx context.Context, storeID string) (*trove.Store, error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	var res *http.Response
	s, err := c.sdk.Beta.MemoryStores.Get(ctx, storeID, anthropic.BetaMemoryStoreGetParams{}, option.WithResponseInto(&res))
	if err != nil {
		return nil, translate(err)
	}
	return storeFromWire(s, res), nil
}

// UpdateStore updates a store; Metadata is sent as a merge patch (a nil
// value removes its key).
func (c *Client) UpdateStore(ctx context.Context, storeID string, p trove.UpdateStoreParams) (*trove.Store, error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	params := anthropic.BetaMemoryStoreUpdateParams{}
	if p.Name != nil {
		params.Name = anthropic.String(*p.Name)
	}
	if p.Description != nil {
		params.Description = anthropic.String(*p.Description)
	}
	var res *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&res)}
	if p.Metadata != nil {
		// The SDK's map[string]string cannot carry a null value; set the
		// merge patch into the body directly.
		opts = append(opts, option.WithJSONSet("metadata", p.Metadata))
	}
	s, err := c.sdk.Beta.MemoryStores.Update(ctx, storeID, params, opts...)
	if err != nil {
		return nil, translate(err)
	}
	return storeFromWire(s, res), nil
}

// ListStores lists stores newest first.
func (c *Client) ListStores(ctx context.Context, p trove.ListStoresParams) (*trove.Page[trove.Store], error) {
	params := anthropic.BetaMemoryStoreListParams{
		CreatedAtGte: optTime(p.CreatedAt.GTE),
		CreatedAtLte: optTime(p.CreatedAt.LTE),
		Limit:        optInt(p.Limit),
		Page:         optString(p.Cursor),
	}
	if p.IncludeArchived {
		params.IncludeArchived = anthropic.Bool(true)
	}
	var res *http.Response
	page, err := c.sdk.Beta.MemoryStores.List(ctx, params, option.WithResponseInto(&res))
	if err != nil {
		return nil, translate(err)
	}
	out := &trove.Page[trove.Store]{Data: make([]trove.Store, len(page.Data)), NextPage: page.NextPage}
	for i := range page.Data {
		out.Data[i] = *storeFromWire(&page.Data[i], res)
	}
	return out, nil
}

// ArchiveStore archives a store (one-way, idempotent).
func (c *Client) ArchiveStore(ctx context.Context, storeID string) (*trove.Store, error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	var res *http.Response
	s, err := c.sdk.Beta.MemoryStores.Archive(ctx, storeID, anthropic.BetaMemoryStoreArchiveParams{}, option.WithResponseInto(&res))
	if err != nil {
		return nil, translate(err)
	}
	return storeFromWire(s, res), nil
}

// DeleteStore deletes a store with its memories and versions.
func (c *Client) DeleteStore(ctx context.Context, storeID string) error {
	if storeID == "" {
		return trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	_, err := c.sdk.Beta.MemoryStores.Delete(ctx, storeID, anthropic.BetaMemoryStoreDeleteParams{})
	return translate(err)
}
