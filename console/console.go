// Package console is Trove's web console: the browser UI for reviewing and
// fixing what agents remember, as one http.Handler served under /console/.
//
// Pages are rendered on the server with html/template (everything a store
// holds is escaped as text) and use a small embedded stylesheet and script
// served from /console/static/; every response carries a Content-Security-
// Policy that allows only those ('self', no inline script or style) and no
// request to another origin.
//
// Sign-in takes an API key and starts a console session
// (trove.ConsoleAuthenticator): the browser gets a random token in an
// HttpOnly, SameSite=Strict cookie (Secure over TLS), never the key. Every
// request re-authenticates the token, so a sign-out or a revoked key counts
// at once. Every state-changing request is a POST that must carry the
// session's CSRF token and come from this origin (Origin and
// Sec-Fetch-Site).
//
// The console reaches stores only through trove.Services with the
// session's Principal in the context, so core's authorization applies and
// its edits are recorded as the user actor naming the signed-in key.
package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/trovehq/trove"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// CookieName is the console session cookie.
const CookieName = "trove_console"

// Config configures a Handler.
type Config struct {
	Services trove.Services
	Sessions trove.SessionService // nil hides the sessions pages
	Dreams   trove.DreamService   // nil hides the dreams pages
	Auth     trove.ConsoleAuthenticator
	Limits   trove.Limits // zero fields: trove.DefaultLimits
	Logger   *slog.Logger // nil discards
	// Now is the clock for displayed relative times; nil means time.Now.
	Now func() time.Time
	// SecureCookie marks the session cookie Secure even on a plain-HTTP
	// request: for a server behind a proxy that terminates TLS, where the
	// browser speaks HTTPS but this server does not. Over TLS the cookie is
	// Secure anyway.
	SecureCookie bool
}

// Handler serves the console. Create it with New.
type Handler struct {
	svc    trove.Services
	sess   trove.SessionService
	dreams trove.DreamService
	hist   trove.HistoryService     // nil hides the time machine pages
	dirs   trove.DirectoryService   // nil hides directory rename and delete
	events trove.EventService       // Sessions' transcripts; nil hides the conversation
	envs   trove.EnvironmentService // Services' environments; nil hides the environments pages
	hooks  trove.WebhookService     // Services' webhooks; nil hides the webhooks pages
	keys   keyLister                // Auth's or Services' key listing; nil shows keys by ID
	secure bool                     // Config.SecureCookie
	auth   trove.ConsoleAuthenticator
	limits trove.Limits
	log    *slog.Logger
	now    func() time.Time
	pages  map[string]*template.Template
	mux    *http.ServeMux
	static http.Handler
}

// New returns the console handler. It panics if the embedded templates do
// not parse (a build defect, caught by every test).
func New(cfg Config) *Handler {
	h := &Handler{svc: cfg.Services, sess: cfg.Sessions, dreams: cfg.Dreams, auth: cfg.Auth, limits: cfg.Limits, log: cfg.Logger, now: cfg.Now, secure: cfg.SecureCookie}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	d := trove.DefaultLimits()
	if h.limits.MaxContentBytes == 0 {
		h.limits = d
	}
	h.hist, _ = cfg.Services.(trove.HistoryService)
	h.dirs, _ = cfg.Services.(trove.DirectoryService)
	h.events, _ = cfg.Sessions.(trove.EventService)
	h.envs, _ = cfg.Services.(trove.EnvironmentService)
	h.hooks, _ = cfg.Services.(trove.WebhookService)
	h.keys, _ = cfg.Auth.(keyLister)
	if h.keys == nil {
		h.keys, _ = cfg.Services.(keyLister)
	}
	h.pages = parsePages(h.now)
	sub, _ := fs.Sub(staticFS, "static")
	h.static = http.StripPrefix(Prefix+"static/", http.FileServerFS(sub))
	h.routes()
	return h
}

func (h *Handler) routes() {
	m := http.NewServeMux()
	h.mux = m
	m.HandleFunc("GET /console/{$}", h.home)
	m.HandleFunc("GET /console/static/", h.serveStatic)
	m.HandleFunc("GET /console/signin", h.signinPage)
	m.HandleFunc("POST /console/signin", h.signin)
	m.Handle("POST /console/signout", h.authed(h.signout))
	const st = "/console/stores/{sid}"
	get := func(p string, fn handlerFunc) { m.Handle("GET "+p, h.authed(fn)) }
	post := func(p string, fn handlerFunc) { m.Handle("POST "+p, h.authed(fn)) }
	get("/console/stores", h.storesPage)
	post("/console/stores", h.createStore)
	get(st, h.storePage)
	post(st, h.updateStore)
	post(st+"/archive", h.archiveStore)
	post(st+"/delete", h.deleteStore)
	post(st+"/dir/rename", h.renameDir)
	post(st+"/dir/delete", h.deleteDir)
	get(st+"/tree", h.treeFragment)
	get(st+"/stats", h.statsJSON)
	get(st+"/new", h.newMemoryPage)
	post(st+"/memories", h.createMemory)
	get(st+"/memories/{mid}", h.memoryPage)
	post(st+"/memories/{mid}", h.updateMemory)
	post(st+"/memories/{mid}/delete", h.deleteMemory)
	get(st+"/memories/{mid}/history", h.historyPage)
	get(st+"/memories/{mid}/diff", h.diffPage)
	get(st+"/versions/{vid}", h.versionPage)
	post(st+"/versions/{vid}/restore", h.restoreVersion)
	post(st+"/versions/{vid}/redact", h.redactVersion)
	get("/console/search", h.searchPage)
	if h.hist != nil { // timemachine.go
		get(st+"/asof", h.asOfPage)
		get(st+"/asof/{mid}", h.asOfMemoryPage)
		get(st+"/changes", h.changesPage)
		post(st+"/fork", h.forkStore)
		get(st+"/rollback", h.rollbackPage)
		post(st+"/rollback", h.applyRollback)
		get(st+"/audit", h.auditPage)
	}
	get("/console/sessions", h.sessionsPage)
	get("/console/sessions/{id}", h.sessionPage)
	get("/console/dreams", h.dreamsPage)
	post("/console/dreams", h.createDream)
	get("/console/dreams/new", h.newDreamPage)
	get("/console/dreams/{id}", h.dreamPage)
	post("/console/dreams/{id}/cancel", h.cancelDream)
	post("/console/dreams/{id}/archive", h.archiveDream)
	get("/console/environments", h.environmentsPage) // environments.go
	get("/console/environments/{id}", h.environmentPage)
	get("/console/webhooks", h.webhooksPage) // webhooks.go
	get("/console/webhooks/{id}", h.webhookPage)
	post("/console/environments/{id}/keys", h.mintEnvironmentKey)
	post("/console/environments/{id}/keys/{kid}/revoke", h.revokeEnvironmentKey)
	m.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		h.render(w, r, http.StatusNotFound, "error", nil, &view{Title: "Not found", Error: "There is no console page at " + r.URL.Path + "."})
	})
}

// ServeHTTP sets the security headers of every console response and routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin") // a form POST then carries its Origin (no-referrer would send "null")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, Prefix+"static/") {
		hd.Set("Cache-Control", "no-store")
	}
	if r.URL.RawQuery != "" {
		q, err := trove.ParseQuery(r.URL.RawQuery, nil)
		if err != nil {
			// A fixed message: the page shows no text taken from the URL.
			h.render(w, r, http.StatusBadRequest, "error", nil, &view{Title: "Bad request", Error: badQuery})
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), queryKey{}, q))
	}
	h.mux.ServeHTTP(w, r)
}

// badQuery is the message of a query string that does not parse.
const badQuery = "This address's query string could not be read: a parameter is malformed (a bad %-escape, a \";\" or no name) or given more than once. Use the console's own links and forms."

// queryKey is the context key of a request's parsed query.
type queryKey struct{}

// query returns r's query string as ServeHTTP parsed it, by the API's one
// rule (trove.ParseQuery): a query that does not parse whole (a bad
// %-escape, a ";", a nameless pair) or that names a parameter twice is a
// 400 page before any handler runs; parameters a page does not know are
// ignored, as the API ignores them. Every console handler reads its query
// here, never with r.URL.Query (which drops what it cannot parse).
func query(r *http.Request) url.Values {
	if q, ok := r.Context().Value(queryKey{}).(url.Values); ok {
		return q
	}
	return url.Values{}
}

func (h *Handler) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-cache")
	h.static.ServeHTTP(w, r)
}

// handlerFunc is a signed-in page: it writes its response itself and
// returns an error to render as an error page otherwise.
type handlerFunc func(w http.ResponseWriter, r *http.Request, s *signed) error

// signed is the signed-in caller of a request.
type signed struct {
	token string
	p     *trove.Principal
	csrf  string
}

// KeyID returns the API key the session was signed in with.
func (s *signed) KeyID() string { return strings.TrimPrefix(s.p.Actor.UserID, "user_") }

// csrfToken derives the session's CSRF token from its (secret) token: a
// page can only know it if it was served to the session's cookie holder.
func csrfToken(token string) string {
	sum := sha256.Sum256([]byte("trove console csrf\x00" + token))
	return hex.EncodeToString(sum[:16])
}

// authed wraps a signed-in page: the cookie's session must authenticate
// (else a GET goes to the sign-in page and anything else is a 401), and a
// POST must pass the same-origin and CSRF checks (else 403).
func (h *Handler) authed(fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie(CookieName)
		var p *trove.Principal
		if err == nil && c.Value != "" {
			p, err = h.auth.ConsoleAuthenticate(r.Context(), c.Value)
		} else {
			err = trove.Errorf(trove.EUNAUTHENTICATED, "not signed in")
		}
		if err != nil {
			if trove.ErrorCode(err) != trove.EUNAUTHENTICATED {
				h.fail(w, r, nil, err)
				return
			}
			if c != nil {
				h.clearCookie(w, r)
			}
			if r.Method == http.MethodGet {
				q := url.Values{"next": {r.URL.RequestURI()}}
				var te *trove.Error
				if errors.As(err, &te) && signinReasons[te.DetailCode] != "" {
					q.Set("why", te.DetailCode) // a code: the page shows its fixed message
				}
				http.Redirect(w, r, Prefix+"signin?"+q.Encode(), http.StatusSeeOther)
				return
			}
			h.render(w, r, http.StatusUnauthorized, "error", nil, &view{Title: "Not signed in", Error: "Not signed in: " + trove.ErrorMessage(err) + ". Sign in and try again."})
			return
		}
		s := &signed{token: c.Value, p: p, csrf: csrfToken(c.Value)}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if msg := crossSite(r); msg != "" {
				h.render(w, r, http.StatusForbidden, "error", s, &view{Title: "Refused", Error: msg})
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, int64(8*h.limits.MaxContentBytes+64<<10))
			if err := r.ParseForm(); err != nil {
				h.render(w, r, http.StatusBadRequest, "error", s, &view{Title: "Bad request", Error: "The form could not be read: it is too large or malformed."})
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
				h.render(w, r, http.StatusForbidden, "error", s, &view{Title: "Refused", Error: "This form is stale or was not sent from the console (missing or wrong CSRF token). Reload the page and try again."})
				return
			}
		}
		ctx := trove.WithPrincipal(r.Context(), p)
		if err := fn(w, r.WithContext(ctx), s); err != nil {
			h.fail(w, r, s, err)
		}
	})
}

// crossOrigin is net/http's check of a browser's Sec-Fetch-Site and Origin
// headers against the request's host.
var crossOrigin = http.NewCrossOriginProtection()

// crossSite returns why a state-changing request is refused as cross-site,
// or "": a browser's Sec-Fetch-Site must be same-origin (or none: typed by
// the user), and without it an Origin header must name this host
// (http.CrossOriginProtection). Requests from non-browsers carry neither
// header; the CSRF token decides for them.
func crossSite(r *http.Request) string {
	if err := crossOrigin.Check(r); err != nil {
		return "Refused a cross-site request. Use the console's own forms."
	}
	return ""
}

func (h *Handler) setCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: token, Path: Prefix, HttpOnly: true, Secure: r.TLS != nil || h.secure,
		SameSite: http.SameSiteStrictMode,
	})
}

func (h *Handler) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: Prefix, HttpOnly: true, Secure: r.TLS != nil || h.secure,
		SameSite: http.SameSiteStrictMode, MaxAge: -1,
	})
}

// view is what every page template gets.
type view struct {
	Title  string
	Error  string
	Notice string
	// Signed-in chrome.
	Signed   bool
	CSRF     string
	KeyID    string
	Sessions bool // the sessions pages exist
	Dreams   bool // the dreams pages exist
	Envs     bool // the environments pages exist
	Hooks    bool // the webhooks pages exist
	// Names shows API keys and sessions by name (names.go); nil shows IDs.
	Names *names
	Data  any
}

// status maps a domain error to the page's HTTP status.
func status(err error) int {
	switch trove.ErrorCode(err) {
	case trove.EINVALID:
		return http.StatusBadRequest
	case trove.EUNAUTHENTICATED:
		return http.StatusUnauthorized
	case trove.EFORBIDDEN:
		return http.StatusForbidden
	case trove.ENOTFOUND:
		return http.StatusNotFound
	case trove.EPATHCONFLICT, trove.EPRECONDITION, trove.ECONFLICT:
		return http.StatusConflict
	case trove.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case trove.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail renders err as an error page with the API's message (never
// internal detail, which goes to the log).
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, s *signed, err error) {
	code := status(err)
	if code == http.StatusInternalServerError {
		h.log.LogAttrs(r.Context(), slog.LevelError, "console", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	h.render(w, r, code, "error", s, &view{Title: http.StatusText(code), Error: trove.ErrorMessage(err)})
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, code int, page string, s *signed, v *view) {
	if s != nil {
		v.Signed, v.CSRF, v.KeyID, v.Sessions = true, s.csrf, s.KeyID(), h.sess != nil
		v.Dreams, v.Envs = h.dreams != nil, h.envs != nil
		v.Hooks = h.hooks != nil
		if v.Names == nil {
			v.Names = h.names(r, s)
		}
	}
	t := h.pages[page]
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", v); err != nil {
		h.log.LogAttrs(r.Context(), slog.LevelError, "console template", slog.String("page", page), slog.String("error", err.Error()))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// fragment renders a template without the layout (the tree's lazily loaded
// directory listings).
func (h *Handler) fragment(w http.ResponseWriter, r *http.Request, page, name string, data any) error {
	var b strings.Builder
	if err := h.pages[page].ExecuteTemplate(&b, name, data); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
	return nil
}

// redirect sends the browser to target (a console path) after a POST,
// with a notice code the page shows.
func redirect(w http.ResponseWriter, r *http.Request, target, notice string) {
	if notice != "" {
		target, frag, _ := strings.Cut(target, "#")
		sep := "?"
		if strings.Contains(target, "?") {
			sep = "&"
		}
		target += sep + "done=" + url.QueryEscape(notice)
		if frag != "" {
			target += "#" + frag
		}
		http.Redirect(w, r, target, http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// notices are the messages a redirect may ask a page to show.
var notices = map[string]string{
	"created":    "Created.",
	"saved":      "Saved.",
	"unchanged":  "No change: the memory already held this content and path.",
	"archived":   "Archived. The store is now read-only.",
	"deleted":    "Deleted.",
	"restored":   "Restored as a new version.",
	"redacted":   "Redacted. Who made the version, the operation and the time stay.",
	"signedout":  "Signed out.",
	"dirmoved":   "Moved: every memory that was below the directory is now below this one, each with its history.",
	"dirdeleted": "Deleted every memory below the directory. Each one's history stays readable.",
	"forked":     "Forked: this new store holds the source store's memories as of the moment you chose.",
}

func notice(r *http.Request) string { return notices[query(r).Get("done")] }

func (h *Handler) home(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if _, err := h.auth.ConsoleAuthenticate(r.Context(), c.Value); err == nil {
			http.Redirect(w, r, Prefix+"stores", http.StatusSeeOther)
			return
		}
	}
	http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
}

type signinData struct {
	Next string
}

// signinReasons are the only reasons the sign-in page shows for a
// session that ended, selected by the code in ?why=.
var signinReasons = map[string]string{
	trove.ConsoleSignedOut:  "Your console session ended (signed out, or signed in elsewhere and signed out there). Sign in again.",
	trove.ConsoleKeyRevoked: "Your console session ended: the API key you signed in with was revoked. Sign in with another key.",
	trove.ConsoleExpired:    "Your console session expired. Sign in again.",
}

// safeNext keeps a post-sign-in target inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix + "stores"
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" || u.User != nil {
		return Prefix + "stores"
	}
	return next
}

func (h *Handler) signinPage(w http.ResponseWriter, r *http.Request) {
	q := query(r)
	v := &view{Title: "Sign in", Data: signinData{Next: safeNext(q.Get("next"))}, Notice: notice(r)}
	// why selects one of the fixed messages; any other value shows
	// nothing: the page never renders text taken from the URL.
	v.Error = signinReasons[q.Get("why")]
	h.render(w, r, http.StatusOK, "signin", nil, v)
}

func (h *Handler) signin(w http.ResponseWriter, r *http.Request) {
	if msg := crossSite(r); msg != "" {
		h.render(w, r, http.StatusForbidden, "error", nil, &view{Title: "Refused", Error: msg})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		h.render(w, r, http.StatusBadRequest, "error", nil, &view{Title: "Bad request", Error: "The form could not be read."})
		return
	}
	next := safeNext(r.PostFormValue("next"))
	key := strings.TrimSpace(r.PostFormValue("api_key"))
	if key == "" {
		h.render(w, r, http.StatusBadRequest, "signin", nil, &view{Title: "Sign in", Error: "Enter an API key (trove_sk_…).", Data: signinData{Next: next}})
		return
	}
	token, _, err := h.auth.StartConsoleSession(r.Context(), key)
	if err != nil {
		msg := trove.ErrorMessage(err)
		if trove.ErrorCode(err) == trove.EUNAUTHENTICATED {
			msg = "That API key was not accepted: " + msg + "."
		}
		h.render(w, r, status(err), "signin", nil, &view{Title: "Sign in", Error: msg, Data: signinData{Next: next}})
		return
	}
	h.setCookie(w, r, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) signout(w http.ResponseWriter, r *http.Request, s *signed) error {
	if err := h.auth.EndConsoleSession(context.WithoutCancel(r.Context()), s.token); err != nil {
		return err
	}
	h.clearCookie(w, r)
	redirect(w, r, Prefix+"signin", "signedout")
	return nil
}

// names is the request's name resolver (names.go).
func (h *Handler) names(r *http.Request, s *signed) *names {
	return &names{ctx: r.Context(), log: h.log, keys: h.keys, sess: h.sess, storeID: r.PathValue("sid"), ws: s.p.WorkspaceID}
}

// parsePages parses the layout and shared blocks once and each page on a
// clone of them. now is the clock of the relative times.
func parsePages(now func() time.Time) map[string]*template.Template {
	fm := template.FuncMap{}
	maps.Copy(fm, funcs)
	fm["time"] = func(t time.Time) template.HTML { return timeHTML(now(), t) }
	fm["timep"] = func(t *time.Time) template.HTML {
		if t == nil {
			return ""
		}
		return timeHTML(now(), *t)
	}
	base := template.Must(template.New("").Funcs(fm).ParseFS(templateFS, "templates/_*.html"))
	entries, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]*template.Template{}
	for _, e := range entries {
		name := strings.TrimSuffix(path.Base(e), ".html")
		if strings.HasPrefix(name, "_") {
			continue
		}
		out[name] = template.Must(template.Must(base.Clone()).ParseFS(templateFS, e))
	}
	return out
}
