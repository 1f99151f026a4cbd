// Package httpapi serves Trove's services over the memory stores API, wire
// compatible with the official Anthropic SDKs (change the base URL and the
// memory stores guide works) and the dreams API (/v1/dreams), plus Trove's
// own session API (with session transcripts) under /trove/v1.
// It also offers Client, which implements the same service interfaces over
// HTTP, so adapters work unchanged against a remote server.
//
// The server depends only on the root package's interfaces; wiring to a
// database happens in cmd.
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/trovehq/trove"
)

// Beta flags accepted on memory store calls. Exactly one must be sent.
const (
	BetaAgentMemory   = "agent-memory-2026-07-22"
	BetaManagedAgents = "managed-agents-2026-04-01"
)

// DefaultMaxBodyBytes bounds request bodies when Config.MaxBodyBytes is 0:
// room for a maximal memory even with every byte JSON-escaped.
const DefaultMaxBodyBytes = 1 << 20

// Config configures a Server.
type Config struct {
	Services trove.Services
	Sessions trove.SessionService // nil disables /trove/v1/sessions (404)
	// Events serves /trove/v1/sessions/{id}/events; nil disables it.
	Events trove.EventService
	// Dreams serves /v1/dreams; nil disables it (404).
	Dreams trove.DreamService
	Auth   trove.Authenticator
	Logger *slog.Logger // nil discards logs
	// MaxBodyBytes bounds request bodies; larger ones get 413. 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Metrics receives the request metrics and is served at /metrics. nil
	// means a fresh registry of the server's own.
	Metrics *prometheus.Registry
	// Health reports whether the database answers; /healthz is 200 when it
	// returns nil and 503 otherwise. nil means always healthy.
	Health func(context.Context) error
	// DreamRunner, when not empty, is reported by /healthz as "dreams":
	// DreamRunnerReady (this node runs dreams with a model key),
	// DreamRunnerNoModel (it runs them without one: they fail with
	// model_not_configured) or DreamRunnerNone (another node runs them).
	DreamRunner string
	// Timeouts bound how long a client may take to send a request and to
	// read its response; zero fields get DefaultTimeouts' values.
	Timeouts Timeouts
	// Changes serves the change feed (/trove/v1/memory_stores/{id}/changes);
	// nil means Services when it is a trove.ChangeService, else the
	// endpoint answers 404.
	Changes trove.ChangeService
	// FeedHeartbeat is how often an idle change stream sends a comment
	// line; 0 means DefaultFeedHeartbeat.
	FeedHeartbeat time.Duration
	// CredentialCheck is how often a long-lived request (a stream, a long
	// poll) re-checks its credential and ends when it is no longer valid
	// (live.go); 0 means trove.DefaultCredentialCheck.
	CredentialCheck time.Duration
	// Console, when not nil, is served under /console/ (the web console),
	// and GET / redirects there; it gets the same timeouts, request IDs,
	// logs and metrics (route "console") as the API. nil: both are 404.
	Console http.Handler
	// Agents, Environments and Work serve /v1/agents, /v1/environments
	// (with /trove/v1/environments/{id}/keys) and the self-hosted work
	// queue; each nil disables its routes (404).
	Agents       trove.AgentService
	Environments trove.EnvironmentService
	Work         trove.WorkService
	// Webhooks serves /v1/organizations/webhooks and
	// /trove/v1/webhooks/{id}/deliveries (webhooks.go); nil disables them
	// (404).
	Webhooks trove.WebhookService
}

// Timeouts bound the time a client may hold the server's resources. Every
// one is a duration from a point the server sees; a client slower than one
// loses its request or its connection, a client within all of them is
// never cut off.
type Timeouts struct {
	// ReadHeader bounds reading a request's line and headers, from the
	// request's first byte (http.Server.ReadHeaderTimeout). Past it the
	// connection is closed with no response.
	ReadHeader time.Duration
	// Body bounds reading a request's body, from when the server starts
	// handling it (right after its headers). Past it the request gets 408
	// with the error envelope and the connection is closed.
	Body time.Duration
	// Write bounds writing one response, from its first byte (a write
	// deadline set per response through http.ResponseController). A client
	// that does not read its responses is disconnected this long after the
	// server starts writing one, so what a connection holds is bounded by
	// one response.
	Write time.Duration
	// Idle bounds how long a keep-alive connection waits for its next
	// request (http.Server.IdleTimeout).
	Idle time.Duration
	// Request bounds the server's work on one request (its context's
	// deadline, which reaches the database driver), from when the handler
	// starts or, for a request with a body, from when the body has arrived
	// (until then the deadline is Body plus Request after the start). A
	// request past it is answered with the retryable 503 envelope. The
	// change feed's long polls and streams are exempt as a whole (their
	// wait is bounded by its own parameter, their heartbeats and the
	// driver's per-call bound); their authentication is not.
	Request time.Duration
}

// DefaultTimeouts are the Timeouts used for zero fields: a minute for a
// body of the largest size at 20 KB/s, and for the largest list page.
func DefaultTimeouts() Timeouts {
	return Timeouts{ReadHeader: 10 * time.Second, Body: time.Minute, Write: time.Minute, Idle: 2 * time.Minute, Request: 30 * time.Second}
}

// withDefaults returns t with each zero or negative field set to its
// default.
func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts()
	for _, f := range []struct{ v, def *time.Duration }{
		{&t.ReadHeader, &d.ReadHeader}, {&t.Body, &d.Body}, {&t.Write, &d.Write}, {&t.Idle, &d.Idle},
		{&t.Request, &d.Request},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return t
}

// Server is the HTTP handler. Create it with NewServer.
type Server struct {
	svc         trove.Services
	sess        trove.SessionService
	events      trove.EventService
	dreams      trove.DreamService
	auth        trove.Authenticator
	log         *slog.Logger
	maxBody     int64
	limits      Timeouts
	health      func(context.Context) error
	dreamRunner string
	mux         *http.ServeMux
	metrics     *metrics
	reg         *prometheus.Registry
	routes      []string // "METHOD /pattern" of every route, for tests
	agents      trove.AgentService
	envs        trove.EnvironmentService
	work        trove.WorkService
	hooks       trove.WebhookService

	msess  trove.ManagedSessionService // nil: no /v1/sessions
	waiter trove.EventWaiter           // nil: no event stream

	changes   trove.ChangeService // nil: no feed
	heartbeat time.Duration
	credCheck time.Duration   // Config.CredentialCheck
	closing   context.Context // done once the http.Server shuts down: streams end
	close     context.CancelFunc
}

// routeKind says what a route requires before its handler runs.
type routeKind int

const (
	kindPublic  routeKind = iota // no credential
	kindTrove                    // a credential
	kindMemory                   // a credential and a memory beta flag
	kindDream                    // a credential and the dreaming beta flag
	kindManaged                  // a credential and managed-agents-2026-04-01
	kindWebhook                  // a credential and webhooks-2026-10-07 (else 404)
)

// handlerFunc is an endpoint: it writes a success itself and returns the
// error to send otherwise.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

type route struct {
	path    string
	kind    routeKind
	methods map[string]handlerFunc
	names   map[string]string // method → metric route label
	allow   string
	long    bool // a long poll or stream: no whole-request deadline (Timeouts.Request)
}

// NewServer returns the API handler over cfg's services.
func NewServer(cfg Config) *Server {
	s := &Server{
		svc:         cfg.Services,
		sess:        cfg.Sessions,
		events:      cfg.Events,
		dreams:      cfg.Dreams,
		auth:        cfg.Auth,
		log:         cfg.Logger,
		maxBody:     cfg.MaxBodyBytes,
		limits:      cfg.Timeouts.withDefaults(),
		health:      cfg.Health,
		dreamRunner: cfg.DreamRunner,
		mux:         http.NewServeMux(),
		reg:         cfg.Metrics,
		agents:      cfg.Agents,
		envs:        cfg.Environments,
		work:        cfg.Work,
		hooks:       cfg.Webhooks,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.changes = cfg.Changes
	if s.changes == nil {
		s.changes, _ = cfg.Services.(trove.ChangeService)
	}
	s.heartbeat = cfg.FeedHeartbeat
	if s.heartbeat <= 0 {
		s.heartbeat = DefaultFeedHeartbeat
	}
	s.credCheck = cfg.CredentialCheck
	s.closing, s.close = context.WithCancel(context.Background())
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	s.metrics = newMetrics(s.reg)

	routes := map[string]*route{}
	add := func(method, path string, kind routeKind, h handlerFunc) {
		rt := routes[path]
		if rt == nil {
			rt = &route{path: path, kind: kind, methods: map[string]handlerFunc{}, names: map[string]string{}}
			routes[path] = rt
		}
		rt.methods[method] = h
		rt.names[method] = method + " " + path
		s.routes = append(s.routes, method+" "+path)
	}
	const store = "/v1/memory_stores/{memory_store_id}"
	add("POST", "/v1/memory_stores", kindMemory, s.createStore)
	add("GET", "/v1/memory_stores", kindMemory, s.listStores)
	add("GET", store, kindMemory, s.getStore)
	add("POST", store, kindMemory, s.updateStore)
	add("DELETE", store, kindMemory, s.deleteStore)
	add("POST", store+"/archive", kindMemory, s.archiveStore)
	add("POST", store+"/memories", kindMemory, s.createMemory)
	add("GET", store+"/memories", kindMemory, s.listMemories)
	add("GET", store+"/memories/{memory_id}", kindMemory, s.getMemory)
	add("POST", store+"/memories/{memory_id}", kindMemory, s.updateMemory)
	add("DELETE", store+"/memories/{memory_id}", kindMemory, s.deleteMemory)
	add("GET", store+"/memory_versions", kindMemory, s.listVersions)
	add("GET", store+"/memory_versions/{memory_version_id}", kindMemory, s.getVersion)
	add("POST", store+"/memory_versions/{memory_version_id}/redact", kindMemory, s.redactVersion)
	add("POST", "/trove/v1/memory_stores/{memory_store_id}/directories/rename", kindTrove, s.renameDirectory)
	add("POST", "/trove/v1/memory_stores/{memory_store_id}/directories/delete", kindTrove, s.deleteDirectory)
	add("GET", "/trove/v1/memory_stores/{memory_store_id}/changes", kindTrove, s.listChanges)
	add("GET", "/trove/v1/search", kindTrove, s.search)
	if h, ok := cfg.Services.(trove.HistoryService); ok {
		s.addHistoryRoutes(h, add) // history.go
	}
	if h, ok := cfg.Services.(trove.StoreStatsService); ok {
		s.addStatsRoutes(h, add) // stats.go
	}
	if s.sess != nil {
		add("POST", "/trove/v1/sessions", kindTrove, s.createSession)
		add("GET", "/trove/v1/sessions", kindTrove, s.listSessions)
		add("GET", "/trove/v1/sessions/{session_id}", kindTrove, s.getSession)
		add("POST", "/trove/v1/sessions/{session_id}/end", kindTrove, s.endSession)
	}
	if s.events != nil {
		add("POST", "/trove/v1/sessions/{session_id}/events", kindTrove, s.appendEvents)
		add("GET", "/trove/v1/sessions/{session_id}/events", kindTrove, s.listEvents)
	}
	if s.dreams != nil {
		add("POST", "/v1/dreams", kindDream, s.createDream)
		add("GET", "/v1/dreams", kindDream, s.listDreams)
		add("GET", "/v1/dreams/{dream_id}", kindDream, s.getDream)
		add("POST", "/v1/dreams/{dream_id}/cancel", kindDream, s.cancelDream)
		add("POST", "/v1/dreams/{dream_id}/archive", kindDream, s.archiveDream)
	}
	s.addManagedRoutes(add) // agents.go, environments.go, work.go
	s.addSessionRoutes(add) // managedsessions.go, eventstream.go
	s.addWebhookRoutes(add) // webhooks.go
	add("GET", "/healthz", kindPublic, s.healthz)
	prom := promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
	add("GET", "/metrics", kindPublic, func(w http.ResponseWriter, r *http.Request) error {
		prom.ServeHTTP(w, r)
		return nil
	})
	// The long-lived streams, where they are served (a server without
	// sessions has no event stream route).
	for _, path := range []string{"/trove/v1/memory_stores/{memory_store_id}/changes", "/v1/sessions/{session_id}/events/stream"} {
		if rt := routes[path]; rt != nil {
			rt.long = true
		}
	}
	for path, rt := range routes {
		var allow []string
		for m := range rt.methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		rt.allow = strings.Join(allow, ", ")
		s.mux.Handle(path, s.dispatch(rt))
	}
	if cfg.Console != nil {
		console := cfg.Console
		s.mux.Handle("/console/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rec, ok := w.(*recorder); ok {
				rec.route = "console"
			}
			ctx, cancel := s.requestContext(r)
			defer cancel()
			console.ServeHTTP(w, r.WithContext(ctx))
		}))
		s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			if rec, ok := w.(*recorder); ok {
				rec.route = "GET /"
			}
			http.Redirect(w, r, "/console/", http.StatusFound)
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, trove.Errorf(trove.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
	})
	return s
}

// recorder remembers what a handler sent, for logs and metrics, and arms
// the response's write deadline at its first byte.
type recorder struct {
	http.ResponseWriter
	rc      http.ResponseController // of ResponseWriter
	write   time.Duration           // Timeouts.Write
	status  int
	route   string
	started bool       // the write deadline is armed
	linger  bool       // the body was refused unread: drain it after the answer (refuseBody)
	query   url.Values // the request's query as dispatch parsed it (queryOf)

	// Values of the response headers ServeHTTP and dispatch set, held
	// here so that they cost no allocation of their own: the recorder
	// lives as long as the request, and net/http copies the header map
	// when the response starts.
	rid, workspace, length [1]string
}

// start arms the write deadline once, when the response begins. An error
// (a ResponseWriter with no deadlines, as in unit tests) leaves the
// response unbounded.
func (r *recorder) start() {
	if !r.started {
		r.started = true
		_ = r.rc.SetWriteDeadline(time.Now().Add(r.write))
	}
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.start()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.start()
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// lingerTime bounds how long a refused HTTP/1 body is read and dropped
// after its answer (also bounded by Timeouts.Body).
const lingerTime = 5 * time.Second

// refuseBody prepares the answer to a request whose body is refused
// unread (413): on HTTP/1 the connection is closed after the answer, and
// ServeHTTP reads and drops what the client goes on sending for up to
// lingerTime first, so that a client that writes its whole body before it
// reads gets the answer rather than a reset (the kernel resets a
// connection closed with unread bytes). Must run before the answer is
// written; w is the recorder ServeHTTP passed down (anything else is left
// alone).
func refuseBody(w http.ResponseWriter, r *http.Request) {
	rec, ok := w.(*recorder)
	if !ok || r.ProtoMajor != 1 || rec.status != 0 {
		return
	}
	// Reading the body after the answer needs full duplex on HTTP/1.
	if rec.rc.EnableFullDuplex() != nil {
		return
	}
	rec.linger = true
	w.Header().Set("Connection", "close")
}

// lingerBody flushes the answer and drops the rest of r's body for up to
// lingerTime (or Timeouts.Body, if shorter).
func (s *Server) lingerBody(rec *recorder, r *http.Request) {
	if rec.rc.Flush() != nil {
		return
	}
	_ = rec.rc.SetReadDeadline(time.Now().Add(min(lingerTime, s.limits.Body)))
	_, _ = io.Copy(io.Discard, r.Body)
}

// statusRefusal is a refusal with no trove code (408), sent by writeError
// as the envelope with its own status, type and retry hint.
type statusRefusal struct {
	status          int
	typ, msg, retry string
}

func (e *statusRefusal) Error() string { return e.msg }

// ServeHTTP gives every response a request-id header, routes the request,
// and records its log line and metrics. It bounds the request's body by
// Timeouts.Body and each response by Timeouts.Write (see Timeouts); served
// by an http.Server, the request's context ends when its client
// disconnects.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, rc: *http.NewResponseController(w), write: s.limits.Write, route: "unmatched"}
	rid := newRequestID(start)
	rec.rid[0] = rid
	w.Header()["Request-Id"] = rec.rid[:] // canonical key: what Header.Set stores
	if r.ContentLength != 0 {
		// Unknown (-1, chunked) or declared: the body must arrive in time.
		// decodeBody lifts the deadline once it has the body, so that a
		// slow handler's context is not cancelled by net/http's read of
		// the next request.
		_ = rec.rc.SetReadDeadline(start.Add(s.limits.Body))
		if r.ProtoMajor == 1 {
			// Until the response starts, writes net/http makes on the
			// handler's behalf (100 Continue, only for a body) are
			// bounded too. Not on HTTP/2, where an expired deadline resets
			// the stream even with nothing to write. Without a body
			// net/http writes nothing before the response, whose first
			// byte arms the deadline (recorder.start; for a handler that
			// writes nothing, the deferred call below).
			_ = rec.rc.SetWriteDeadline(start.Add(s.limits.Body + s.limits.Write))
		}
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.LogAttrs(r.Context(), slog.LevelError, "panic", slog.String("request_id", rid), slog.Any("panic", v))
			if rec.status == 0 {
				s.writeError(rec, r, trove.Errorf(trove.EINTERNAL, "panic: %v", v))
			}
		}
		// A handler that wrote nothing: net/http writes its empty 200
		// after this returns, within the write deadline too.
		rec.start()
		d := time.Since(start)
		s.metrics.observe(rec.route, rec.status, d)
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
			slog.String("request_id", rid),
			slog.String("route", rec.route),
			slog.Int("status", rec.status),
			slog.Duration("duration", d))
	}()
	if !cleanPath(r.URL.Path) {
		// ServeMux would answer with a 307 redirect to the cleaned path, an
		// HTML body no client of this API expects, and for ".." a route the
		// caller did not name.
		s.writeError(rec, r, trove.Errorf(trove.ENOTFOUND,
			"no route for %s %s: the path must not contain empty, \".\" or \"..\" segments", r.Method, r.URL.Path))
		return
	}
	s.mux.ServeHTTP(rec, r)
	if rec.linger {
		s.lingerBody(rec, r)
	}
}

// cleanPath reports whether p is absolute with no empty, "." or ".."
// segment (a trailing "/" is allowed), the paths ServeMux routes without
// redirecting.
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return true // no empty segment and no segment starting with "."
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

func (s *Server) dispatch(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := rt.methods[r.Method]
		if rec, isRec := w.(*recorder); isRec {
			if ok {
				rec.route = rt.names[r.Method]
			} else {
				rec.route = rt.path
			}
		}
		if !ok {
			w.Header().Set("Allow", rt.allow)
			s.writeStatusError(w, http.StatusMethodNotAllowed, "invalid_request_error",
				"method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+rt.allow)
			return
		}
		ctx, cancel := s.requestContext(r)
		defer cancel()
		if !rt.long {
			r = r.WithContext(ctx)
		}
		if rt.kind != kindPublic {
			// Authentication comes before the body: its own deadline.
			actx, acancel := context.WithTimeout(ctx, s.limits.Request)
			p, err := s.authenticate(r.WithContext(actx))
			acancel()
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			if rec, isRec := w.(*recorder); isRec {
				rec.workspace[0] = p.WorkspaceID
				w.Header()["Anthropic-Workspace-Id"] = rec.workspace[:] // canonical key, as Header.Set
			} else {
				w.Header().Set("Anthropic-Workspace-Id", p.WorkspaceID)
			}
			if ws := r.Header.Get("Anthropic-Workspace-Id"); ws != "" && ws != p.WorkspaceID {
				s.writeError(w, r, trove.Errorf(trove.EFORBIDDEN,
					"anthropic-workspace-id %q does not match the credential's workspace", ws))
				return
			}
			if rt.kind == kindMemory {
				if err := checkBetas(r.Header); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			if rt.kind == kindManaged {
				if err := checkManagedBeta(r.Header); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			if rt.kind == kindDream {
				if err := checkDreamBeta(r.Header); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			if rt.kind == kindWebhook {
				if err := checkWebhookBeta(r.Header); err != nil {
					s.writeError(w, r, err)
					return
				}
			}
			r = r.WithContext(trove.WithPrincipal(r.Context(), p))
		}
		if r.URL.RawQuery != "" {
			// The whole query, for every route, once the caller is known
			// (query.go): handlers read it through queryOf.
			q, err := parseQuery(r.URL.RawQuery)
			if err != nil {
				if m := routeMarkers[rt.path]; m != "" {
					w.Header().Set(m, "1") // as the handler would have
				}
				s.writeError(w, r, err)
				return
			}
			if rec, isRec := w.(*recorder); isRec {
				rec.query = q
			}
		}
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// requestContext returns r's context with the request's deadline
// (Timeouts.Request from now; for a request with a body, Timeouts.Body plus
// Timeouts.Request, narrowed by narrowDeadline once the body is in).
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	d := s.limits.Request
	if r.ContentLength != 0 {
		d += s.limits.Body
	}
	return context.WithTimeout(r.Context(), d)
}

// narrowDeadline gives r, whose body has just been read, the deadline
// Timeouts.Request from now when that is earlier than its own. It changes
// *r in place, so the handler that read the body sees it in r.Context().
// The timer is released when the request's context ends.
func (s *Server) narrowDeadline(r *http.Request) {
	ctx := r.Context()
	dl := time.Now().Add(s.limits.Request)
	if cur, ok := ctx.Deadline(); ok && !dl.Before(cur) {
		return
	}
	nctx, cancel := context.WithDeadline(ctx, dl)
	context.AfterFunc(ctx, cancel)
	*r = *r.WithContext(nctx)
}

// routeMarkers are the headers Trove's own endpoints put on every answer,
// errors included, so that a client tells "no such endpoint" from a
// refusal; dispatch adds them to the refusals it makes for the handler.
var routeMarkers = map[string]string{
	"/trove/v1/memory_stores/{memory_store_id}/changes": changesHeader,
	"/trove/v1/search": searchHeader,
}

// authenticate reads the credential from Authorization: Bearer or
// x-api-key. Returns EUNAUTHENTICATED if none is sent or it is not valid.
func (s *Server) authenticate(r *http.Request) (*trove.Principal, error) {
	secret := ""
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, tok, ok := strings.Cut(a, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
			return nil, trove.Errorf(trove.EUNAUTHENTICATED, "the Authorization header must be \"Bearer <key>\"")
		}
		secret = strings.TrimSpace(tok)
	} else {
		secret = strings.TrimSpace(r.Header.Get("X-Api-Key"))
	}
	if secret == "" {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "missing credential: send \"Authorization: Bearer <key>\" or \"x-api-key: <key>\"")
	}
	p, err := s.auth.Authenticate(r.Context(), secret)
	if err != nil {
		return nil, err
	}
	if p == nil {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "invalid credential")
	}
	return p, nil
}

// checkBetas requires exactly one of the two memory betas among the
// comma-separated anthropic-beta values (repeated headers count too).
// Returns EINVALID otherwise; other betas are ignored.
func checkBetas(h http.Header) error {
	var mem, agents bool
	for _, line := range h.Values("Anthropic-Beta") {
		for v := range strings.SplitSeq(line, ",") {
			switch strings.TrimSpace(v) {
			case BetaAgentMemory:
				mem = true
			case BetaManagedAgents:
				agents = true
			}
		}
	}
	switch {
	case mem && agents:
		return trove.Errorf(trove.EINVALID, "send either %s or %s in anthropic-beta on memory store calls, not both", BetaAgentMemory, BetaManagedAgents)
	case !mem && !agents:
		return trove.Errorf(trove.EINVALID, "memory store calls need the anthropic-beta header %s", BetaAgentMemory)
	}
	return nil
}

func requestIDFrom(w http.ResponseWriter) string { return w.Header().Get("Request-Id") }

// contentTypeJSON is the Content-Type header value of every JSON response,
// shared: net/http only reads header values.
var contentTypeJSON = []string{"application/json"}

type jsonBuf struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonBufs = sync.Pool{New: func() any {
	b := &jsonBuf{}
	b.enc = json.NewEncoder(&b.buf)
	b.enc.SetEscapeHTML(false)
	return b
}}

// writeJSON sends v as JSON with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	b := jsonBufs.Get().(*jsonBuf)
	b.buf.Reset()
	if err := b.enc.Encode(v); err != nil {
		jsonBufs.Put(b)
		s.log.Error("encoding response", "error", err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"type":"error","error":{"type":"api_error","message":"internal server error"},"request_id":"` + requestIDFrom(w) + `"}`))
		return
	}
	h := w.Header()
	h["Content-Type"] = contentTypeJSON // canonical keys set directly: no canonicalization, no slice per header
	h["Content-Length"] = []string{strconv.Itoa(b.buf.Len())}
	w.WriteHeader(status)
	_, _ = w.Write(b.buf.Bytes())
	if b.buf.Cap() <= 1<<20 {
		jsonBufs.Put(b)
	}
}

func (s *Server) ok(w http.ResponseWriter, v any) error {
	s.writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	if s.health != nil {
		if err := s.health(r.Context()); err != nil {
			return &trove.Error{Code: trove.EUNAVAILABLE, Message: "database unavailable", Err: err}
		}
	}
	if s.dreamRunner != "" {
		return s.ok(w, map[string]string{"status": "ok", "dreams": s.dreamRunner})
	}
	return s.ok(w, map[string]string{"status": "ok"})
}

// The dream runner states /healthz reports (Config.DreamRunner).
const (
	DreamRunnerReady   = "ready"
	DreamRunnerNoModel = "no_model"
	DreamRunnerNone    = "none"
)
