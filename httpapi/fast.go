package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/net/http/httpguts"

	"github.com/trovehq/trove"
)

// FastHTTP returns a fasthttp server for the API: the same routes,
// dispatch, handlers and error mapping as ServeHTTP, with the per-connection
// cost of fasthttp instead of net/http's. Each request is handed to
// ServeHTTP as a pooled *http.Request and http.ResponseWriter built from the
// fasthttp request (header map, URL and body reader reused), so both
// transports answer alike.
//
// The returned server is configured for that: the original request path is
// routed (no normalizing), request bodies are streamed so the body limit is
// Config.MaxBodyBytes as on net/http (413 envelope), requests fasthttp cannot
// parse get the 400 envelope, and no Server header is sent. Set its timeouts
// (ReadTimeout bounds reading the request headers; bodies get
// FastBodyReadTimeout) and Logger before serving, then Serve a listener and
// ShutdownWithContext to stop: in-flight requests finish, their responses
// carry Connection: close.
//
// A request whose handler left more than 256 KiB of its body unread (a 413
// from Content-Length) is answered with Connection: close and the rest of
// the body drained for up to FastLingerTime, so the client reads the
// answer instead of a reset.
//
// Unlike net/http, a request's context is not cancelled when its client
// disconnects (fasthttp does not watch the connection while the handler
// runs).
func (s *Server) FastHTTP() *fasthttp.Server {
	fs := &fasthttp.Server{
		Handler:                       s.handleFast,
		ErrorHandler:                  s.fastError,
		ExpectHandler:                 s.fastExpect,
		NoDefaultServerHeader:         true,
		NoDefaultContentType:          true,
		DisableHeaderNamesNormalizing: true,
		DisablePreParseMultipartForm:  true,
		StreamRequestBody:             true,
		MaxRequestBodySize:            int(min(s.maxBody, 1<<30)),
		ReadBufferSize:                fastReadBufferSize,
		CloseOnShutdown:               true,
		SecureErrorLogMessage:         true, // no request bytes in its log lines
		Logger:                        fastLogger{s.log},
	}
	fs.HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		// Only with a ReadTimeout: fasthttp resets the deadline before the
		// next request then, and would not without one.
		if fs.ReadTimeout <= 0 || h.ContentLength() == 0 || h.ContentLength() == -2 {
			return fasthttp.RequestConfig{}
		}
		return fasthttp.RequestConfig{ReadTimeout: FastBodyReadTimeout}
	}
	return fs
}

// fastReadBufferSize bounds the request line and headers on fasthttp (a
// request with more gets the 431 envelope); net/http allows 1 MB, the SDKs
// send well under 2 KB.
const fastReadBufferSize = 32 << 10

// FastBodyReadTimeout is how long a request with a body may take to arrive
// once its headers have on the FastHTTP server (its ReadTimeout, when set,
// bounds only the headers, like net/http's ReadHeaderTimeout).
const FastBodyReadTimeout = 5 * time.Minute

// fastLogger sends fasthttp's own log lines (connection errors) to the
// server's logger at Warn, as serve does with net/http's ErrorLog.
type fastLogger struct{ log *slog.Logger }

func (l fastLogger) Printf(format string, args ...any) {
	l.log.Warn(fmt.Sprintf(format, args...))
}

// fastExchange is one request on the fasthttp transport as net/http types;
// pooled, with its maps and slices reused.
type fastExchange struct {
	ctx    *fasthttp.RequestCtx
	req    http.Request
	url    url.URL
	reqHdr http.Header
	vals   []string // backing store for reqHdr's values
	body   fastBody
	w      fastWriter
}

var fastExchanges = sync.Pool{New: func() any {
	x := &fastExchange{reqHdr: http.Header{}}
	x.w.hdr = http.Header{}
	return x
}}

// fastBody is the request body: the fasthttp body stream (bounded by
// decodeBody's MaxBytesReader, as on net/http), counting what was read.
type fastBody struct {
	r   io.Reader
	n   int64 // bytes read
	eof bool  // the stream ended
}

func (b *fastBody) Read(p []byte) (int, error) {
	if b.r == nil {
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *fastBody) Close() error { return nil }

// fastWriter is the http.ResponseWriter over a fasthttp response. The
// header is copied when the status is written; later changes are ignored,
// as on net/http.
type fastWriter struct {
	ctx         *fasthttp.RequestCtx
	hdr         http.Header
	wroteHeader bool
	sniff       bool // no Content-Type was set: detect it from the body
}

func (w *fastWriter) Header() http.Header { return w.hdr }

func (w *fastWriter) WriteHeader(code int) {
	if w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	w.wroteHeader = true
	rh := &w.ctx.Response.Header
	for k, vs := range w.hdr {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection":
			continue // fasthttp frames the body itself
		}
		for i, v := range vs {
			if i == 0 {
				rh.Set(k, v)
			} else {
				rh.Add(k, v)
			}
		}
	}
	w.sniff = len(w.hdr["Content-Type"]) == 0
	w.ctx.SetStatusCode(code)
}

func (w *fastWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.ctx.Response.AppendBody(b)
	return len(b), nil
}

// finish completes the response once the handler has returned.
func (w *fastWriter) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if body := w.ctx.Response.Body(); w.sniff && len(body) > 0 {
		w.ctx.Response.Header.SetContentType(http.DetectContentType(body[:min(len(body), 512)]))
	}
}

// handleFast is the fasthttp handler: serveFast, then a lingering close
// when the handler left more of the request body unread than the server
// discards itself.
func (s *Server) handleFast(ctx *fasthttp.RequestCtx) {
	if s.serveFast(ctx) {
		lingerClose(ctx)
	}
}

// serveFast runs ServeHTTP on net/http types built from ctx. It reports
// whether the request body was left unread beyond fastDiscardLimit, which
// fasthttp would answer by closing the connection at once.
func (s *Server) serveFast(ctx *fasthttp.RequestCtx) (unread bool) {
	x := fastExchanges.Get().(*fastExchange)
	defer x.release()
	defer func() {
		if v := recover(); v != nil {
			// ServeHTTP re-panics only http.ErrAbortHandler: as net/http
			// does, drop the connection without a response.
			ctx.Response.Reset()
			ctx.SetConnectionClose()
			_ = ctx.Conn().Close()
			unread = false
		}
	}()
	x.ctx = ctx
	if ctx.IsOptions() && string(ctx.Request.Header.RequestURI()) == "*" {
		// The server-wide OPTIONS, which net/http answers itself.
		ctx.Response.Header.SetContentLength(0)
		return false
	}
	s.serve(&x.w, &x.req, x.build())
	x.w.finish()
	return x.bodyOverflows()
}

// fastDiscardLimit is how much of a body its handler left unread fasthttp
// reads and drops after the response to keep the connection (its
// maxUnreadStreamBodySize, and net/http's equivalent); with more left it
// closes the connection.
const fastDiscardLimit = 256 << 10

// bodyOverflows reports whether more than fastDiscardLimit of the request
// body is left unread. A chunked body's rest is unknown: it is discarded
// here, up to the limit, to find out.
func (x *fastExchange) bodyOverflows() bool {
	if x.req.Body != &x.body || x.body.eof {
		return false
	}
	if x.req.ContentLength >= 0 {
		return x.req.ContentLength-x.body.n > fastDiscardLimit
	}
	_, err := io.CopyN(io.Discard, &x.body, fastDiscardLimit+1)
	return err == nil
}

// FastLingerTime bounds how long the FastHTTP server keeps reading and
// dropping a request body its handler refused unread, after answering.
const FastLingerTime = 5 * time.Second

// lingerClose answers ctx and then closes its connection the way TCP's
// lingering close does: closing a connection with unread bytes makes the
// kernel reset it, and the reset can reach the client before it has read
// the answer (a client that writes its whole body before reading never
// sees it at all). So the answer is sent with Connection: close, the
// sending side shut down, and the rest of the request read and dropped
// until the client closes or FastLingerTime has passed. net/http does the
// same with a 500 ms wait, without reading.
func lingerClose(ctx *fasthttp.RequestCtx) {
	res := fasthttp.AcquireResponse()
	ctx.Response.CopyTo(res)
	res.SetConnectionClose()
	res.SkipBody = ctx.IsHead()
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		defer fasthttp.ReleaseResponse(res)
		raw := c
		if u, ok := c.(interface{ UnsafeConn() net.Conn }); ok {
			raw = u.UnsafeConn()
		}
		_ = raw.SetDeadline(time.Now().Add(FastLingerTime))
		bw := bufio.NewWriter(raw)
		if res.Write(bw) != nil || bw.Flush() != nil {
			return
		}
		if cw, ok := raw.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_, _ = io.Copy(io.Discard, c) // c reads what fasthttp buffered first
	})
}

// fastExpect decides on Expect: 100-continue. net/http sends the 100 only
// when a handler first reads the body, so a request whose declared body is
// over the limit gets its refusal (413 envelope, or whatever the dispatch
// answers first) without the client sending the body. fasthttp sends the
// 100 before the handler runs; for such a request, run the handler here
// instead (it refuses from Content-Length alone) and send its answer in
// place of the 100. The connection then closes, as on net/http.
func (s *Server) fastExpect(ctx *fasthttp.RequestCtx) int {
	if int64(ctx.Request.Header.ContentLength()) <= s.maxBody {
		return fasthttp.StatusContinue
	}
	s.serveFast(ctx) // the client sends no body: nothing to linger for
	return ctx.Response.StatusCode()
}

// fastError answers requests fasthttp could not read with the error
// envelope, through the same logging and metrics as every other request.
func (s *Server) fastError(ctx *fasthttp.RequestCtx, err error) {
	x := fastExchanges.Get().(*fastExchange)
	defer x.release()
	x.ctx = ctx
	ctx.Response.Reset()
	_ = x.build() // as much of the request as was read, for the log
	var refusal error
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		refusal = tooLarge(s.maxBody)
	case isTimeout(err):
		refusal = &statusRefusal{http.StatusRequestTimeout, "invalid_request_error", "the request did not arrive in time"}
	case errors.Is(err, fasthttp.ErrUnsupportedTransferEncoding):
		refusal = &statusRefusal{http.StatusNotImplemented, "invalid_request_error", "unsupported Transfer-Encoding"}
	case errors.As(err, new(*fasthttp.ErrSmallBuffer)):
		refusal = &statusRefusal{http.StatusRequestHeaderFieldsTooLarge, "invalid_request_error",
			fmt.Sprintf("the request line and headers exceed the limit of %d bytes", fastReadBufferSize)}
	default:
		// fasthttp's error quotes the request's bytes: not for the client.
		refusal = trove.Errorf(trove.EINVALID, "malformed HTTP request")
	}
	s.serve(&x.w, &x.req, refusal)
	x.w.finish()
	ctx.SetConnectionClose()
}

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.As(err, &ne) && ne.Timeout()
}

// build fills x.req from x.ctx. An error is a request ServeHTTP must
// refuse (400), as net/http does before any handler runs.
func (x *fastExchange) build() error {
	ctx := x.ctx
	h := &ctx.Request.Header
	x.w.ctx = ctx
	r := &x.req
	r.Method = methodString(h.Method())
	switch p := h.Protocol(); string(p) { // no allocation for the two usual ones
	case "HTTP/1.1":
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	case "HTTP/1.0":
		r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.0", 1, 0
	default:
		var ok bool
		r.Proto = string(p)
		if r.ProtoMajor, r.ProtoMinor, ok = http.ParseHTTPVersion(r.Proto); !ok {
			r.ProtoMajor, r.ProtoMinor = 1, 1
		}
	}
	r.RequestURI = string(h.RequestURI())
	r.Header = x.reqHdr
	vals := x.vals[:0]
	badName := false
	for k, v := range h.All() {
		key := headerKey(k)
		// Canonicalizing changes only letters' case (and leaves a name
		// with invalid bytes as it is), so the key is checked for k.
		if !httpguts.ValidHeaderFieldName(key) {
			badName = true
		}
		if key == "Host" {
			continue // r.Host, as net/http
		}
		vals = append(vals, string(v))
		if old, ok := x.reqHdr[key]; ok {
			x.reqHdr[key] = append(old, vals[len(vals)-1])
		} else {
			x.reqHdr[key] = vals[len(vals)-1 : len(vals) : len(vals)]
		}
	}
	x.vals = vals
	r.Host = string(h.Host())
	r.RemoteAddr = ctx.RemoteAddr().String()
	r.ContentLength = int64(h.ContentLength())
	switch r.ContentLength {
	case -2:
		r.ContentLength = 0
	case -1:
		r.TransferEncoding = []string{"chunked"}
	}
	x.body.r = ctx.RequestBodyStream()
	if r.ContentLength == 0 {
		r.Body = http.NoBody
	} else {
		r.Body = &x.body
	}
	r.Close = h.ConnectionClose()
	u, err := parseRequestURI(&x.url, r.RequestURI)
	if err != nil {
		x.url = url.URL{Path: "/"}
		r.URL = &x.url
		return trove.Errorf(trove.EINVALID, "malformed HTTP request: invalid request target %q", truncate(r.RequestURI, 80))
	}
	r.URL = u
	if r.Host == "" {
		r.Host = u.Host
	} else if u.Host != "" {
		r.Host = u.Host // absolute-form: the target's host wins
	}
	// What net/http refuses before any handler runs and fasthttp lets
	// through.
	if r.ProtoMajor != 1 {
		return &statusRefusal{http.StatusHTTPVersionNotSupported, "invalid_request_error", "unsupported protocol version " + r.Proto}
	}
	if badName {
		return trove.Errorf(trove.EINVALID, "malformed HTTP request: invalid header name")
	}
	return nil
}

// parseRequestURI parses a request target as net/http does
// (url.ParseRequestURI), into dst for the common origin-form with no
// escapes.
func parseRequestURI(dst *url.URL, raw string) (*url.URL, error) {
	p, q, _ := strings.Cut(raw, "?")
	if len(p) > 0 && p[0] == '/' && !strings.ContainsAny(p, "%#") && !strings.HasPrefix(p, "//") && !hasCTL(raw) {
		*dst = url.URL{Path: p, RawQuery: q, ForceQuery: q == "" && strings.HasSuffix(raw, "?")}
		return dst, nil
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return nil, err
	}
	*dst = *u
	return dst, nil
}

// hasCTL reports whether s has an ASCII control character or space, which
// url.ParseRequestURI refuses or treats specially.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func (x *fastExchange) release() {
	clear(x.reqHdr)
	clear(x.vals)
	clear(x.w.hdr)
	if len(x.reqHdr) > 64 || cap(x.vals) > 256 {
		return // an unusual request: do not keep its size around
	}
	x.req = http.Request{}
	x.url = url.URL{}
	x.body = fastBody{}
	x.w = fastWriter{hdr: x.w.hdr}
	x.ctx = nil
	fastExchanges.Put(x)
}

func methodString(m []byte) string {
	switch string(m) { // no allocation: the compiler compares in place
	case "GET":
		return "GET"
	case "POST":
		return "POST"
	case "DELETE":
		return "DELETE"
	case "HEAD":
		return "HEAD"
	case "PUT":
		return "PUT"
	case "PATCH":
		return "PATCH"
	case "OPTIONS":
		return "OPTIONS"
	}
	return string(m)
}

// commonHeaders are canonical names a request usually carries, returned
// without allocating.
var commonHeaders = []string{
	"Host", "Authorization", "X-Api-Key", "Anthropic-Beta", "Anthropic-Version",
	"Anthropic-Workspace-Id", "Content-Type", "Content-Length", "User-Agent",
	"Accept", "Accept-Encoding", "Connection", "Expect",
}

// headerKey returns the canonical form of a request header name, as
// net/http's header map holds it.
func headerKey(k []byte) string {
	for _, c := range commonHeaders {
		if equalFold(c, k) {
			return c
		}
	}
	return http.CanonicalHeaderKey(string(k))
}

// equalFold reports whether the ASCII strings s and b are equal ignoring
// case.
func equalFold(s string, b []byte) bool {
	if len(s) != len(b) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c, d := s[i], b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
