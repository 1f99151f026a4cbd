package console

import (
	"net/http"

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
	pg, err := h.sess.ListSessions(r.Context(), trove.ListSessionsParams{Limit: 50, Cursor: r.URL.Query().Get("cursor")})
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
	h.render(w, r, http.StatusOK, "session", s, &view{Title: "Session " + se.ID, Data: d})
	return nil
}
