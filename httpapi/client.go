package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/trovehq/trove"
)

// Client implements trove.Services and trove.SessionService against a
// remote Trove server (or any server speaking the memory stores API for the
// Services part). The memory store calls go through the official Anthropic
// Go SDK; the /trove/v1 session calls use plain net/http. Every error is a
// *trove.Error: API errors keep their code (and conflicting path/memory ID),
// transport failures are EUNAVAILABLE.
//
// The credential given to NewClient decides who acts; a Principal in the
// context is ignored.
type Client struct {
	sdk       anthropic.Client
	http      *http.Client
	base      string
	key       string
	workspace string
}

var (
	_ trove.Services       = (*Client)(nil)
	_ trove.SessionService = (*Client)(nil)
)

type clientOptions struct {
	httpClient *http.Client
	workspace  string
	maxRetries int
	extra      []option.RequestOption
}

// ClientOption configures NewClient.
type ClientOption func(*clientOptions)

// WithHTTPClient sets the HTTP client (default: a client with a 60 s
// timeout that keeps up to MaxIdleConnsPerHost idle connections).
func WithHTTPClient(c *http.Client) ClientOption {
	return func(o *clientOptions) { o.httpClient = c }
}

// WithWorkspaceID sends anthropic-workspace-id on every request; the server
// refuses (EFORBIDDEN) when it differs from the credential's workspace.
func WithWorkspaceID(id string) ClientOption { return func(o *clientOptions) { o.workspace = id } }

// WithMaxRetries sets how often the SDK retries transient failures
// (connection errors, 5xx, 429); default 2. Deterministic refusals (every
// 4xx, 409 included) are never retried.
func WithMaxRetries(n int) ClientOption { return func(o *clientOptions) { o.maxRetries = n } }

// WithRequestOptions adds SDK request options to every memory store call.
func WithRequestOptions(opts ...option.RequestOption) ClientOption {
	return func(o *clientOptions) { o.extra = append(o.extra, opts...) }
}

// NewClient returns a Client for the server at baseURL (e.g.
// "http://127.0.0.1:7007") authenticating with apiKey, an API key or a
// session token.
func NewClient(baseURL, apiKey string, opts ...ClientOption) *Client {
	o := clientOptions{maxRetries: 2}
	for _, f := range opts {
		f(&o)
	}
	if o.httpClient == nil {
		o.httpClient = &http.Client{Timeout: 60 * time.Second, Transport: defaultTransport()}
	}
	base := strings.TrimRight(baseURL, "/")
	sdkOpts := []option.RequestOption{
		option.WithBaseURL(base + "/"),
		option.WithAPIKey(apiKey),
		option.WithHTTPClient(o.httpClient),
		option.WithMaxRetries(o.maxRetries),
		option.WithMiddleware(noRetryOnRefusal),
	}
	if o.workspace != "" {
		sdkOpts = append(sdkOpts, option.WithHeader("anthropic-workspace-id", o.workspace))
	}
	sdkOpts = append(sdkOpts, o.extra...)
	return &Client{
		sdk:       anthropic.NewClient(sdkOpts...),
		http:      o.httpClient,
		base:      base,
		key:       apiKey,
		workspace: o.workspace,
	}
}

// MaxIdleConnsPerHost is how many idle connections to the server the
// default HTTP client keeps for reuse. net/http's default, 2, is below the
// concurrency of the client's users (an MCP server running a model's
// parallel tool calls, the sync worker's transfers): each request beyond
// two in flight would open a new connection and close it after one use.
const MaxIdleConnsPerHost = 64

// defaultTransport is net/http's default transport keeping
// MaxIdleConnsPerHost idle connections.
func defaultTransport() http.RoundTripper {
	dt, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t := dt.Clone()
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	return t
}

// noRetryOnRefusal marks every 4xx but 408 and 429 as not retryable, so
// the SDK never resends a request the server refused for good (its default
// retries 409s).
func noRetryOnRefusal(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err == nil && res != nil && res.StatusCode >= 400 && res.StatusCode < 500 &&
		res.StatusCode != http.StatusRequestTimeout && res.StatusCode != http.StatusTooManyRequests {
		res.Header.Set("x-should-retry", "false")
	}
	return res, err
}

// codeForType is the inverse of errorClasses: an envelope type back to a
// trove code.
var codeForType = map[string]string{
	"invalid_request_error":            trove.EINVALID,
	"authentication_error":             trove.EUNAUTHENTICATED,
	"permission_error":                 trove.EFORBIDDEN,
	"not_found_error":                  trove.ENOTFOUND,
	"memory_path_conflict_error":       trove.EPATHCONFLICT,
	"memory_precondition_failed_error": trove.EPRECONDITION,
	"conflict_error":                   trove.ECONFLICT,
	"request_too_large":                trove.ETOOLARGE,
	"overloaded_error":                 trove.EUNAVAILABLE,
	"rate_limit_error":                 trove.EUNAVAILABLE,
	"timeout_error":                    trove.EUNAVAILABLE,
}

// codeForStatus classifies an error response whose type is not known.
func codeForStatus(status int) string {
	switch {
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return trove.EINVALID
	case status == http.StatusUnauthorized:
		return trove.EUNAUTHENTICATED
	case status == http.StatusForbidden:
		return trove.EFORBIDDEN
	case status == http.StatusNotFound:
		return trove.ENOTFOUND
	case status == http.StatusConflict, status == http.StatusPreconditionFailed:
		return trove.ECONFLICT
	case status == http.StatusRequestEntityTooLarge:
		return trove.ETOOLARGE
	case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests,
		status == http.StatusGatewayTimeout, status == 529, status == http.StatusBadGateway:
		return trove.EUNAVAILABLE
	}
	return trove.EINTERNAL
}

// envelopeError is the part of the error envelope fromEnvelope reads.
type envelopeError struct {
	Error struct {
		Type                string `json:"type"`
		Message             string `json:"message"`
		ConflictingPath     string `json:"conflicting_path"`
		ConflictingMemoryID string `json:"conflicting_memory_id"`
		Details             struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
}

// fromEnvelope builds the *trove.Error for an error response.
func fromEnvelope(status int, body []byte, cause error) *trove.Error {
	var env envelopeError
	_ = json.Unmarshal(body, &env)
	code, ok := codeForType[env.Error.Type]
	if !ok {
		code = codeForStatus(status)
	}
	if env.Error.Type == "api_error" && status == http.StatusServiceUnavailable {
		code = trove.EUNAVAILABLE
	}
	msg := env.Error.Message
	if msg == "" {
		msg = fmt.Sprintf("server answered %d %s", status, http.StatusText(status))
	}
	return &trove.Error{
		Code:                code,
		Message:             msg,
		ConflictingPath:     env.Error.ConflictingPath,
		ConflictingMemoryID: env.Error.ConflictingMemoryID,
		DetailCode:          env.Error.Details.ErrorCode,
		Err:                 cause,
	}
}

// translate turns an SDK or transport error into a *trove.Error.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var apierr *anthropic.Error
	if errors.As(err, &apierr) {
		return fromEnvelope(apierr.StatusCode, []byte(apierr.RawJSON()), err)
	}
	var te *trove.Error
	if errors.As(err, &te) {
		return te
	}
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
}

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
func (c *Client) ListMemories(ctx context.Context, storeID string, p trove.ListMemoriesParams) (*trove.Page[trove.MemoryListItem], error) {
	if storeID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "memory store \"\" not found")
	}
	page, err := c.sdk.Beta.MemoryStores.Memories.List(ctx, storeID, anthropic.BetaMemoryStoreMemoryListParams{
		Depth:      optInt(p.Depth),
		Limit:      optInt(p.Limit),
		Page:       optString(p.Cursor),
		PathPrefix: optString(p.PathPrefix),
		View:       anthropic.BetaManagedAgentsMemoryView(p.View),
	})
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

// Sessions, over plain net/http.

// CreateSession attaches stores to a new session and returns it with its
// token.
func (c *Client) CreateSession(ctx context.Context, p trove.CreateSessionParams) (*trove.Session, string, error) {
	if p.Agent != nil {
		return c.createManagedSession(ctx, p)
	}
	body := wireCreateSession{Resources: make([]wireSessionResourceParam, len(p.Stores))}
	for i, a := range p.Stores {
		typ, id := "memory_store", a.StoreID
		r := wireSessionResourceParam{Type: &typ, MemoryStoreID: &id}
		if a.Access != "" {
			acc := string(a.Access)
			r.Access = &acc
		}
		if a.Instructions != "" {
			in := a.Instructions
			r.Instructions = &in
		}
		body.Resources[i] = r
	}
	var out wireSessionIn
	ws, err := c.do(ctx, http.MethodPost, "/trove/v1/sessions", nil, &body, &out)
	if err != nil {
		return nil, "", err
	}
	return out.toSession(ws), out.Token, nil
}

// GetSession returns a session of the credential's workspace.
func (c *Client) GetSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	if sessionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	var out wireSessionIn
	ws, err := c.do(ctx, http.MethodGet, "/trove/v1/sessions/"+url.PathEscape(sessionID), nil, nil, &out)
	if err != nil {
		return nil, err
	}
	return out.toSession(ws), nil
}

// ListSessions lists sessions newest first.
func (c *Client) ListSessions(ctx context.Context, p trove.ListSessionsParams) (*trove.Page[trove.Session], error) {
	q := url.Values{}
	if p.StoreID != "" {
		q.Set("memory_store_id", p.StoreID)
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("page", p.Cursor)
	}
	var out struct {
		Data     []wireSessionIn `json:"data"`
		NextPage *string         `json:"next_page"`
	}
	ws, err := c.do(ctx, http.MethodGet, "/trove/v1/sessions", q, nil, &out)
	if err != nil {
		return nil, err
	}
	page := &trove.Page[trove.Session]{Data: make([]trove.Session, len(out.Data))}
	if out.NextPage != nil {
		page.NextPage = *out.NextPage
	}
	for i := range out.Data {
		page.Data[i] = *out.Data[i].toSession(ws)
	}
	return page, nil
}

// EndSession ends a session (idempotent).
func (c *Client) EndSession(ctx context.Context, sessionID string) (*trove.Session, error) {
	if sessionID == "" {
		return nil, trove.Errorf(trove.ENOTFOUND, "session \"\" not found")
	}
	var out wireSessionIn
	ws, err := c.do(ctx, http.MethodPost, "/trove/v1/sessions/"+url.PathEscape(sessionID)+"/end", nil, nil, &out)
	if err != nil {
		return nil, err
	}
	return out.toSession(ws), nil
}

// wireSessionIn is a session as the client reads it.
type wireSessionIn struct {
	ID        string `json:"id"`
	Resources []struct {
		MemoryStoreID string  `json:"memory_store_id"`
		Access        string  `json:"access"`
		Name          string  `json:"name"`
		Description   string  `json:"description"`
		Instructions  *string `json:"instructions"`
		MountPath     string  `json:"mount_path"`
	} `json:"resources"`
	CreatedAt string  `json:"created_at"`
	EndedAt   *string `json:"ended_at"`
	Token     string  `json:"token"`

	Status        string            `json:"status"`
	Title         *string           `json:"title"`
	Metadata      map[string]string `json:"metadata"`
	UpdatedAt     string            `json:"updated_at"`
	ArchivedAt    *string           `json:"archived_at"`
	AgentID       string            `json:"agent_id"`
	AgentVersion  int64             `json:"agent_version"`
	EnvironmentID string            `json:"environment_id"`
}

func (w *wireSessionIn) toSession(workspaceID string) *trove.Session {
	s := &trove.Session{ID: w.ID, WorkspaceID: workspaceID, CreatedAt: parseTime(w.CreatedAt), Stores: make([]trove.SessionStore, len(w.Resources)),
		Status: trove.SessionStatus(w.Status), Metadata: w.Metadata}
	if w.EndedAt != nil {
		t := parseTime(*w.EndedAt)
		s.EndedAt = &t
	}
	if w.Title != nil {
		s.Title = *w.Title
	}
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	if w.UpdatedAt != "" {
		s.UpdatedAt = parseTime(w.UpdatedAt)
	}
	if w.ArchivedAt != nil {
		t := parseTime(*w.ArchivedAt)
		s.ArchivedAt = &t
	}
	if w.AgentID != "" {
		s.Managed = &trove.ManagedSession{AgentID: w.AgentID, AgentVersion: w.AgentVersion, EnvironmentID: w.EnvironmentID}
	}
	for i, r := range w.Resources {
		s.Stores[i] = trove.SessionStore{
			StoreID: r.MemoryStoreID, Access: trove.Access(r.Access), Name: r.Name,
			Description: r.Description, MountPath: r.MountPath,
		}
		if r.Instructions != nil {
			s.Stores[i].Instructions = *r.Instructions
		}
	}
	return s
}

// do sends one /trove/v1 request and decodes a 200 into out, returning the
// workspace the server echoed; any other answer becomes a *trove.Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) (string, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return "", trove.Errorf(trove.EINVALID, "encoding the request: %v", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return "", trove.Errorf(trove.EINVALID, "building the request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if strings.HasPrefix(path, "/v1/sessions") {
		req.Header.Set("anthropic-beta", BetaManagedAgents)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.workspace != "" {
		req.Header.Set("anthropic-workspace-id", c.workspace)
	}
	if strings.HasPrefix(path, "/v1/") { // agents and environments (client_agents.go)
		req.Header.Set("anthropic-beta", BetaManagedAgents)
	}
	if strings.HasPrefix(path, "/v1/organizations/") { // webhooks (client_webhooks.go)
		req.Header.Set("anthropic-beta", BetaWebhooks)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return "", &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return "", &trove.Error{Code: trove.EUNAVAILABLE, Message: "reading the response failed", Err: err}
	}
	if res.StatusCode != http.StatusOK {
		return "", fromEnvelope(res.StatusCode, data, &httpStatusError{method: method, path: path, status: res.StatusCode, statusText: res.Status, directories: res.Header.Get(directoriesHeader) != "", changes: res.Header.Get(changesHeader) != "", search: res.Header.Get(searchHeader) != ""})
	}
	if err := json.Unmarshal(data, out); err != nil {
		return "", &trove.Error{Code: trove.EINTERNAL, Message: "the server's response is not valid JSON", Err: err}
	}
	return workspaceOf(res), nil
}
