package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

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
