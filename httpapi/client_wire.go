package httpapi

import (
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

func optString(s string) param.Opt[string] {
	if s == "" {
		return param.Opt[string]{}
	}
	return anthropic.String(s)
}

func optTime(t *time.Time) param.Opt[time.Time] {
	if t == nil {
		return param.Opt[time.Time]{}
	}
	return anthropic.Time(*t)
}

func optInt(n int) param.Opt[int64] {
	if n == 0 {
		return param.Opt[int64]{}
	}
	return anthropic.Int(int64(n))
}

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UTC()
}

// workspaceOf returns the workspace the server echoed in res, which the
// wire objects do not carry.
func workspaceOf(res *http.Response) string {
	if res == nil {
		return ""
	}
	return res.Header.Get("anthropic-workspace-id")
}

// storeFromWire converts a store read through the SDK; res is the response
// it came in.
func storeFromWire(s *anthropic.BetaManagedAgentsMemoryStore, res *http.Response) *trove.Store {
	out := &trove.Store{
		ID:          s.ID,
		WorkspaceID: workspaceOf(res),
		Name:        s.Name,
		Description: s.Description,
		Metadata:    s.Metadata,
		CreatedAt:   s.CreatedAt.UTC(),
		UpdatedAt:   s.UpdatedAt.UTC(),
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	if s.JSON.ArchivedAt.Valid() {
		t := s.ArchivedAt.UTC()
		out.ArchivedAt = &t
	}
	return out
}

func memoryFromWire(m *anthropic.BetaManagedAgentsMemory) *trove.Memory {
	out := &trove.Memory{
		ID:        m.ID,
		StoreID:   m.MemoryStoreID,
		Path:      m.Path,
		SizeBytes: int(m.ContentSizeBytes),
		SHA256:    m.ContentSha256,
		VersionID: m.MemoryVersionID,
		CreatedAt: m.CreatedAt.UTC(),
		UpdatedAt: m.UpdatedAt.UTC(),
	}
	if m.JSON.Content.Valid() {
		c := m.Content
		out.Content = &c
	}
	return out
}

func actorFromWire(a *anthropic.BetaManagedAgentsActorUnion) *trove.Actor {
	if a.Type == "" {
		return nil
	}
	return &trove.Actor{
		Type:             trove.ActorType(a.Type),
		APIKeyID:         a.APIKeyID,
		SessionID:        a.SessionID,
		UserID:           a.UserID,
		ServiceAccountID: a.ServiceAccountID,
	}
}

func versionFromWire(v *anthropic.BetaManagedAgentsMemoryVersion) *trove.MemoryVersion {
	out := &trove.MemoryVersion{
		ID:         v.ID,
		StoreID:    v.MemoryStoreID,
		MemoryID:   v.MemoryID,
		Operation:  trove.Operation(v.Operation),
		CreatedBy:  actorFromWire(&v.CreatedBy),
		CreatedAt:  v.CreatedAt.UTC(),
		RedactedBy: actorFromWire(&v.RedactedBy),
	}
	if v.JSON.Path.Valid() {
		p := v.Path
		out.Path = &p
	}
	if v.JSON.Content.Valid() {
		c := v.Content
		out.Content = &c
	}
	if v.JSON.ContentSizeBytes.Valid() {
		n := int(v.ContentSizeBytes)
		out.SizeBytes = &n
	}
	if v.JSON.ContentSha256.Valid() {
		h := v.ContentSha256
		out.SHA256 = &h
	}
	if v.JSON.RedactedAt.Valid() {
		t := v.RedactedAt.UTC()
		out.RedactedAt = &t
	}
	return out
}

// pageDecodeOptions read a response as leniently as the SDK's decoder
// (encoding/json underneath) does: unknown members are ignored (the hosted
// API may add some), a repeated name keeps its last value, and invalid
// UTF-8 becomes U+FFFD.
var pageDecodeOptions = json.JoinOptions(
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
)

// decodeMemoryPage decodes a page of the memory listing (GET
// /v1/memory_stores/{id}/memories) into what the SDK's List and
// memoryFromWire made of it: wireMemory holds either item type (a
// memory_prefix has only type and path), content is set when the member is
// a string (null or absent under view=basic), the times are parsed as the
// SDK parses them (sdkTime). A body that is not such a page is EINTERNAL;
// an item of another type too, as before.
func decodeMemoryPage(body []byte) (*trove.Page[trove.MemoryListItem], error) {
	var page wirePage[wireMemory]
	if err := json.Unmarshal(body, &page, pageDecodeOptions); err != nil {
		return nil, &trove.Error{Code: trove.EINTERNAL, Message: "the server's response is not a memory listing", Err: err}
	}
	out := &trove.Page[trove.MemoryListItem]{Data: make([]trove.MemoryListItem, len(page.Data))}
	if page.NextPage != nil {
		out.NextPage = *page.NextPage
	}
	mems := make([]trove.Memory, 0, len(page.Data)) // one allocation for the page's memories
	for i := range page.Data {
		w := &page.Data[i]
		switch w.Type {
		case "memory":
			mems = append(mems, trove.Memory{
				ID:        w.ID,
				StoreID:   w.MemoryStoreID,
				Path:      w.Path,
				Content:   w.Content,
				SizeBytes: w.ContentSizeBytes,
				SHA256:    w.ContentSHA256,
				VersionID: w.MemoryVersionID,
				CreatedAt: sdkTime(w.CreatedAt),
				UpdatedAt: sdkTime(w.UpdatedAt),
			})
			out.Data[i].Memory = &mems[len(mems)-1]
		case "memory_prefix":
			out.Data[i].Prefix = &trove.MemoryPrefix{Path: w.Path}
		default:
			return nil, trove.Errorf(trove.EINTERNAL, "list item of unknown type %q", w.Type)
		}
	}
	return out, nil
}

// sdkLayouts are the layouts the SDK's decoder tries, in order, for a
// date-time that is not RFC 3339.
var sdkLayouts = []string{
	"2006-01-02",
	"2006-01-02T15:04:05Z07:00",
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02 15:04:05",
}

// sdkTime parses a date-time as the SDK's decoder does (RFC 3339, then
// sdkLayouts; the zero time when none fits), in UTC.
func sdkTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		for _, l := range sdkLayouts {
			if t, err = time.Parse(l, s); err == nil {
				break
			}
		}
		if err != nil {
			return time.Time{}
		}
	}
	return t.UTC()
}
