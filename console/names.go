package console

import (
	"context"
	"html/template"
	"log/slog"
	"strings"

	"github.com/trovehq/trove"
)

// keyLister lists the API keys of the caller's workspace: core.Service's
// operator function (EFORBIDDEN for a session credential). A console
// without one shows keys by ID.
type keyLister interface {
	ListKeys(ctx context.Context, workspaceID string) ([]trove.APIKey, error)
}

// names puts the names people gave API keys and sessions in place of
// their IDs on one page. It loads lazily and once per request: the first
// key shown costs one listing of the workspace's keys, the first session
// one listing of sessions (of the page's store when it has one, newest
// first, one page); every later look-up is from that. Whatever a listing
// leaves out (or a listing that fails) shows as the ID, so a page never
// fails for want of a name. A nil *names shows IDs.
type names struct {
	ctx     context.Context
	log     *slog.Logger
	keys    keyLister            // nil: no key names
	sess    trove.SessionService // nil: no session names
	storeID string               // the page's store, to narrow the session listing
	ws      string

	keyNames  map[string]string // loaded on first use
	sessNames map[string]string
	// Listings made, for tests of the one-listing rule.
	keyListings, sessListings int
}

// sessionNamesLimit is how many sessions the one listing reads.
const sessionNamesLimit = 100

func (n *names) key(id string) string {
	if n == nil || n.keys == nil || id == "" {
		return ""
	}
	if n.keyNames == nil {
		n.keyNames = map[string]string{}
		n.keyListings++
		ks, err := n.keys.ListKeys(n.ctx, n.ws)
		if err != nil {
			n.log.LogAttrs(n.ctx, slog.LevelDebug, "console key names", slog.String("error", err.Error()))
		}
		for _, k := range ks {
			n.keyNames[k.ID] = k.Name
		}
	}
	return n.keyNames[id]
}

func (n *names) session(id string) string {
	if n == nil || n.sess == nil || id == "" {
		return ""
	}
	if n.sessNames == nil {
		n.sessNames = map[string]string{}
		n.sessListings++
		pg, err := n.sess.ListSessions(n.ctx, trove.ListSessionsParams{StoreID: n.storeID, Limit: sessionNamesLimit, IncludeArchived: true})
		if err != nil {
			n.log.LogAttrs(n.ctx, slog.LevelDebug, "console session names", slog.String("error", err.Error()))
		} else {
			for _, s := range pg.Data {
				n.sessNames[s.ID] = s.Title
			}
		}
	}
	return n.sessNames[id]
}

// nameOf is the name of an API key (apikey_…) or session (sesn_…) ID,
// or "" when it has none (or is neither).
func (n *names) nameOf(id string) string {
	switch {
	case strings.HasPrefix(id, trove.PrefixAPIKey):
		return n.key(id)
	case strings.HasPrefix(id, trove.PrefixSession):
		return n.session(id)
	}
	return ""
}

// Actor writes who made a change: its kind and the name of its key or
// session, with the ID on hover; the ID itself when there is no name.
func (n *names) Actor(a *trove.Actor) template.HTML {
	if a == nil {
		return "unknown"
	}
	id, _ := a.ID()
	kind := actorKind(a.Type)
	ref := id
	if a.Type == trove.ActorUser { // a console user is its API key: user_apikey_…
		ref = strings.TrimPrefix(id, "user_")
	}
	name := n.nameOf(ref)
	if name == "" {
		return template.HTML(template.HTMLEscapeString(kind + " " + id))
	}
	return template.HTML(`<span class="actor" title="` + template.HTMLEscapeString(id) + `">` + template.HTMLEscapeString(kind) + ` <span class="actor-name">` + template.HTMLEscapeString(name) + `</span></span>`)
}

// ID writes an API key or session ID as its name (the ID on hover), or the
// ID in code when it has no name.
func (n *names) ID(id string) template.HTML {
	if name := n.nameOf(id); name != "" {
		return template.HTML(`<span class="actor" title="` + template.HTMLEscapeString(id) + `"><span class="actor-name">` + template.HTMLEscapeString(name) + `</span></span>`)
	}
	return template.HTML(`<code>` + template.HTMLEscapeString(id) + `</code>`)
}

// Name is the plain-text name of an API key or session ID, or the ID.
func (n *names) Name(id string) string {
	if name := n.nameOf(id); name != "" {
		return name
	}
	return id
}

func actorKind(t trove.ActorType) string {
	switch t {
	case trove.ActorAPI:
		return "API key"
	case trove.ActorSession:
		return "session"
	case trove.ActorUser:
		return "console user"
	case trove.ActorServiceAccount:
		return "service account"
	}
	return string(t)
}
