package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
)

var (
	_ trove.EventService = (*Client)(nil)
	_ trove.DreamService = (*Client)(nil)
)

// AppendEvents appends events to a session's transcript
// (POST /trove/v1/sessions/{id}/events).
func (c *Client) AppendEvents(ctx context.Context, sessionID string, events []trove.NewSessionEvent) ([]trove.SessionEvent, error) {
	if sessionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	body := struct {
		Events []json.RawMessage `json:"events"`
	}{Events: make([]json.RawMessage, len(events))}
	for i, e := range events {
		m := map[string]json.RawMessage{}
		if e.Body != "" {
			if err := json.Unmarshal([]byte(e.Body), &m); err != nil || m == nil {
				return nil, trove.Errorf(trove.EINVALID, "events[%d]: the event must be a JSON object", i)
			}
		}
		t, _ := json.Marshal(e.Type)
		m["type"] = t
		b, err := json.Marshal(m)
		if err != nil {
			return nil, trove.Errorf(trove.EINVALID, "events[%d]: %v", i, err)
		}
		body.Events[i] = b
	}
	var out struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if _, err := c.do(ctx, http.MethodPost, "/trove/v1/sessions/"+url.PathEscape(sessionID)+"/events", nil, &body, &out); err != nil {
		return nil, err
	}
	return eventsFromWire(sessionID, out.Data), nil
}

// ListEvents pages a session's transcript oldest first.
func (c *Client) ListEvents(ctx context.Context, sessionID string, p trove.ListEventsParams) (*trove.Page[trove.SessionEvent], error) {
	if sessionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	q := url.Values{}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("page", p.Cursor)
	}
	if p.AfterSeq != 0 {
		q.Set("after_seq", strconv.FormatInt(p.AfterSeq, 10))
	}
	if p.Order != "" {
		q.Set("order", p.Order)
	}
	if len(p.Types) > 0 {
		q["types[]"] = p.Types
	}
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{"created_at[gte]", p.CreatedAt.GTE}, {"created_at[lte]", p.CreatedAt.LTE}, {"created_at[gt]", p.CreatedAfter}, {"created_at[lt]", p.CreatedBefore}} {
		if b.t != nil {
			q.Set(b.name, b.t.UTC().Format(time.RFC3339Nano))
		}
	}
	var out struct {
		Data     []map[string]json.RawMessage `json:"data"`
		NextPage *string                      `json:"next_page"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/trove/v1/sessions/"+url.PathEscape(sessionID)+"/events", q, nil, &out); err != nil {
		return nil, err
	}
	page := &trove.Page[trove.SessionEvent]{Data: eventsFromWire(sessionID, out.Data)}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	return page, nil
}

// eventsFromWire turns wire events back into SessionEvents: id, type and
// processed_at are taken out of the body. Seq and CreatedBy are not on the
// wire and stay zero.
func eventsFromWire(sessionID string, data []map[string]json.RawMessage) []trove.SessionEvent {
	out := make([]trove.SessionEvent, len(data))
	for i, m := range data {
		e := trove.SessionEvent{SessionID: sessionID}
		var at string
		_ = json.Unmarshal(m["id"], &e.ID)
		_ = json.Unmarshal(m["type"], &e.Type)
		_ = json.Unmarshal(m["processed_at"], &at)
		e.ProcessedAt = parseTime(at)
		delete(m, "id")
		delete(m, "type")
		delete(m, "processed_at")
		b, _ := json.Marshal(m)
		e.Body = string(b)
		out[i] = e
	}
	return out
}

// CreateDream queues a dream through the official SDK (Beta.Dreams.New).
func (c *Client) CreateDream(ctx context.Context, p trove.CreateDreamParams) (*trove.Dream, error) {
	params := anthropic.BetaDreamNewParams{
		Inputs: []anthropic.BetaDreamInputUnionParam{
			{OfMemoryStore: &anthropic.BetaDreamMemoryStoreInputParam{MemoryStoreID: p.StoreID}},
			{OfSessions: &anthropic.BetaDreamSessionsInputParam{SessionIDs: p.SessionIDs}},
		},
		Instructions: optString(p.Instructions),
	}
	if p.ModelSpeed != "" {
		params.Model = anthropic.BetaDreamNewParamsModelUnion{OfBetaDreamModelConfig: &anthropic.BetaDreamModelConfigParam{
			ID: p.Model, Speed: anthropic.BetaDreamModelConfigParamSpeed(p.ModelSpeed)}}
	} else {
		params.Model = anthropic.BetaDreamNewParamsModelUnion{OfString: anthropic.String(p.Model)}
	}
	switch p.OutputBehavior {
	case trove.OutputUpdateExisting:
		params.OutputBehavior = anthropic.BetaOutputBehaviorUnionParam{OfUpdateExisting: &anthropic.BetaOutputBehaviorUpdateExistingParam{MemoryStoreID: p.OutputStoreID}}
	case trove.OutputCreateNew:
		params.OutputBehavior = anthropic.BetaOutputBehaviorUnionParam{OfCreateNew: &anthropic.BetaOutputBehaviorCreateNewParam{}}
	}
	d, err := c.sdk.Beta.Dreams.New(ctx, params)
	if err != nil {
		return nil, translate(err)
	}
	return dreamFromSDK(d), nil
}

// GetDream returns a dream (Beta.Dreams.Get).
func (c *Client) GetDream(ctx context.Context, dreamID string) (*trove.Dream, error) {
	if dreamID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "dream \"\" not found")
	}
	d, err := c.sdk.Beta.Dreams.Get(ctx, dreamID, anthropic.BetaDreamGetParams{})
	if err != nil {
		return nil, translate(err)
	}
	return dreamFromSDK(d), nil
}

// ListDreams lists dreams newest first (Beta.Dreams.List).
func (c *Client) ListDreams(ctx context.Context, p trove.ListDreamsParams) (*trove.Page[trove.Dream], error) {
	params := anthropic.BetaDreamListParams{
		CreatedAtGt: optTime(p.CreatedAfter),
		CreatedAtLt: optTime(p.CreatedBefore),
		Limit:       optInt(p.Limit),
		Page:        optString(p.Cursor),
	}
	if p.IncludeArchived {
		params.IncludeArchived = anthropic.Bool(true)
	}
	for _, s := range p.Statuses {
		params.Statuses = append(params.Statuses, anthropic.BetaDreamStatus(s))
	}
	page, err := c.sdk.Beta.Dreams.List(ctx, params)
	if err != nil {
		return nil, translate(err)
	}
	out := &trove.Page[trove.Dream]{Data: make([]trove.Dream, len(page.Data)), NextPage: page.NextPage}
	for i := range page.Data {
		out.Data[i] = *dreamFromSDK(&page.Data[i])
	}
	return out, nil
}

// CancelDream cancels a dream (Beta.Dreams.Cancel).
func (c *Client) CancelDream(ctx context.Context, dreamID string) (*trove.Dream, error) {
	if dreamID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "dream \"\" not found")
	}
	d, err := c.sdk.Beta.Dreams.Cancel(ctx, dreamID, anthropic.BetaDreamCancelParams{})
	if err != nil {
		return nil, translate(err)
	}
	return dreamFromSDK(d), nil
}

// ArchiveDream archives a dream (Beta.Dreams.Archive).
func (c *Client) ArchiveDream(ctx context.Context, dreamID string) (*trove.Dream, error) {
	if dreamID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "dream \"\" not found")
	}
	d, err := c.sdk.Beta.Dreams.Archive(ctx, dreamID, anthropic.BetaDreamArchiveParams{})
	if err != nil {
		return nil, translate(err)
	}
	return dreamFromSDK(d), nil
}

// dreamFromSDK converts the SDK's dream. The runner's bookkeeping
// (lease, attempts) and the creator are not on the wire.
func dreamFromSDK(d *anthropic.BetaDream) *trove.Dream {
	out := &trove.Dream{
		ID:             d.ID,
		Status:         trove.DreamStatus(d.Status),
		SessionIDs:     []string{},
		Model:          d.Model.ID,
		ModelSpeed:     string(d.Model.Speed),
		Instructions:   d.Instructions,
		OutputBehavior: d.OutputBehavior.Type,
		SessionID:      d.SessionID,
		Usage: trove.DreamUsage{
			InputTokens: d.Usage.InputTokens, OutputTokens: d.Usage.OutputTokens,
			CacheReadInputTokens: d.Usage.CacheReadInputTokens, CacheCreationInputTokens: d.Usage.CacheCreationInputTokens,
		},
		CreatedAt: d.CreatedAt.UTC(),
	}
	for _, in := range d.Inputs {
		switch in.Type {
		case "memory_store":
			out.InputStoreID = in.MemoryStoreID
		case "sessions":
			out.SessionIDs = append(out.SessionIDs, in.SessionIDs...)
		}
	}
	for _, o := range d.Outputs {
		out.OutputStoreID = o.MemoryStoreID
	}
	if d.JSON.Error.Valid() && d.Error.Type != "" {
		out.Error = &trove.DreamError{Type: d.Error.Type, Message: d.Error.Message}
	}
	if d.JSON.EndedAt.Valid() && !d.EndedAt.IsZero() {
		t := d.EndedAt.UTC()
		out.EndedAt = &t
	}
	if d.JSON.ArchivedAt.Valid() && !d.ArchivedAt.IsZero() {
		t := d.ArchivedAt.UTC()
		out.ArchivedAt = &t
	}
	return out
}
