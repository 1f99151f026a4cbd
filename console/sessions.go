package console

import (
	"net/http"
	"slices"

	"github.com/trovehq/trove"
)

type sessionsData struct {
	Sessions []trove.Session
	Next     string
}

func (h *Handler) sessionsPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.sess == nil {
		return trove.Errorf(trove.ENOTFOUND, "sessions are not served here")
	}
	pg, err := h.sess.ListSessions(r.Context(), trove.ListSessionsParams{Limit: 50, Cursor: query(r).Get("cursor")})
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "sessions", s, &view{Title: "Sessions", Data: sessionsData{Sessions: pg.Data, Next: pg.NextPage}})
	return nil
}

// sessionStore is an attached store with the versions the session wrote
// in it (newest first, one page).
type sessionStore struct {
	trove.SessionStore
	Versions []trove.MemoryVersion
	More     bool
	Err      string // the store could not be read (deleted since)
}

type sessionData struct {
	Session *trove.Session
	Stores  []sessionStore
	History bool // the time machine pages exist (rollback links)
	// Events is one page of the transcript, oldest first: the newest
	// transcriptPageSize events, or the page before ?before=.
	Events      []eventView
	EventsShown bool               // the transcript could be read here
	Older       string             // cursor of the older page, "" at the start
	Paged       bool               // this is an older page (a link back to the newest)
	Environment *trove.Environment // a managed session's environment, when it still exists
}

func (h *Handler) sessionPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.sess == nil {
		return trove.Errorf(trove.ENOTFOUND, "sessions are not served here")
	}
	se, err := h.sess.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d := sessionData{Session: se, History: h.hist != nil}
	for _, a := range se.Stores {
		ss := sessionStore{SessionStore: a}
		pg, err := h.svc.ListVersions(r.Context(), a.StoreID, trove.ListVersionsParams{SessionID: se.ID, Limit: historyPageSize})
		switch trove.ErrorCode(err) {
		case "":
			ss.Versions, ss.More = pg.Data, pg.NextPage != ""
		case trove.ENOTFOUND:
			ss.Err = trove.ErrorMessage(err)
		default:
			return err
		}
		d.Stores = append(d.Stores, ss)
	}
	if h.events != nil {
		cur := query(r).Get("older")
		pg, err := h.events.ListEvents(r.Context(), se.ID, trove.ListEventsParams{Order: "desc", Limit: transcriptPageSize, Cursor: cur})
		if err != nil {
			return err
		}
		d.EventsShown, d.Older, d.Paged = true, pg.NextPage, cur != ""
		for _, e := range slices.Backward(pg.Data) {
			d.Events = append(d.Events, viewEvent(e))
		}
	}
	if se.Managed != nil && se.Managed.EnvironmentID != "" && h.envs != nil {
		env, err := h.envs.GetEnvironment(r.Context(), se.Managed.EnvironmentID)
		switch trove.ErrorCode(err) {
		case "":
			d.Environment = env
		case trove.ENOTFOUND:
		default:
			return err
		}
	}
	h.render(w, r, http.StatusOK, "session", s, &view{Title: "Session " + se.ID, Data: d})
	return nil
}
