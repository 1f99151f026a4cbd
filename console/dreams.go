package console

import (
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/dreamdiff"
	"github.com/trovehq/trove/internal/textdiff"
)

// dreamStatuses are the statuses the dreams list filters by.
var dreamStatuses = []trove.DreamStatus{trove.DreamPending, trove.DreamRunning, trove.DreamCompleted, trove.DreamFailed, trove.DreamCanceled}

type dreamsData struct {
	Dreams   []trove.Dream
	Statuses []trove.DreamStatus
	Status   string // the status filtered by, or ""
	Archived bool   // archived dreams shown
	Next     string // cursor of the next page
	Stores   []trove.Store
	Base     string // this list's URL with its filters, for paging
	// StoreNames names the stores of the listing (one page of stores);
	// a store it leaves out shows as its ID.
	StoreNames map[string]string
}

// StoreName is a store's name, or "" when the listing left it out.
func (d dreamsData) StoreName(id string) string { return d.StoreNames[id] }

func init() {
	maps.Copy(notices, map[string]string{
		"dreamcreated":  "Dream queued. The server runs it; reload to follow its status.",
		"dreamcanceled": "Dream canceled. Its output store keeps what was written.",
		"dreamarchived": "Dream archived. Its output store stays.",
	})
}

func (h *Handler) dreamsOff() error {
	return trove.Errorf(trove.ENOTFOUND, "dreams are not served here")
}

// dreamsPage lists dreams newest first, a page at a time, filtered by
// status and with or without archived ones, and offers to create one from
// a store.
func (h *Handler) dreamsPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dreams == nil {
		return h.dreamsOff()
	}
	q := query(r)
	d := dreamsData{Statuses: dreamStatuses, Archived: q.Get("archived") == "1"}
	p := trove.ListDreamsParams{Limit: 50, Cursor: q.Get("cursor"), IncludeArchived: d.Archived}
	base := url.Values{}
	if st := q.Get("status"); st != "" {
		if !slices.Contains(dreamStatuses, trove.DreamStatus(st)) {
			return trove.Errorf(trove.EINVALID, "unknown status %q: choose pending, running, completed, failed or canceled", st)
		}
		d.Status = st
		p.Statuses = []trove.DreamStatus{trove.DreamStatus(st)}
		base.Set("status", st)
	}
	if d.Archived {
		base.Set("archived", "1")
	}
	d.Base = Prefix + "dreams"
	if len(base) > 0 {
		d.Base += "?" + base.Encode()
	}
	pg, err := h.dreams.ListDreams(r.Context(), p)
	if err != nil {
		return err
	}
	d.Dreams, d.Next = pg.Data, pg.NextPage
	// One listing names the stores (archived ones too: a dream's input may
	// have been archived since) and offers the live ones for a new dream.
	stores, err := h.svc.ListStores(r.Context(), trove.ListStoresParams{Limit: 100, IncludeArchived: true})
	if err != nil {
		return err
	}
	d.StoreNames = make(map[string]string, len(stores.Data))
	for _, st := range stores.Data {
		d.StoreNames[st.ID] = st.Name
		if st.ArchivedAt == nil {
			d.Stores = append(d.Stores, st)
		}
	}
	h.render(w, r, http.StatusOK, "dreams", s, &view{Title: "Dreams", Notice: notice(r), Data: d})
	return nil
}

type newDreamData struct {
	Store        *trove.Store
	Sessions     []trove.Session
	More         bool // the store has more sessions than listed
	Model        string
	Max          int
	Instructions string
	Chosen       map[string]bool
	InPlace      bool
}

// newDreamPage is the form that creates a dream from a store: the store's
// sessions (newest first, up to the dream limit) to pick from, the model,
// the instructions and the output behaviour.
func (h *Handler) newDreamPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dreams == nil {
		return h.dreamsOff()
	}
	sid := query(r).Get("store")
	if sid == "" {
		return trove.Errorf(trove.EINVALID, "choose the store the dream consolidates")
	}
	d, err := h.newDreamData(r, sid)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "dream_new", s, &view{Title: "New dream", Data: d})
	return nil
}

func (h *Handler) newDreamData(r *http.Request, sid string) (*newDreamData, error) {
	st, err := h.svc.GetStore(r.Context(), sid)
	if err != nil {
		return nil, err
	}
	d := &newDreamData{Store: st, Model: trove.ModelFromEnv(trove.DreamModelEnv, trove.DefaultDreamModel), Max: h.limits.MaxDreamSessions, Chosen: map[string]bool{}}
	if h.sess != nil {
		pg, err := h.sess.ListSessions(r.Context(), trove.ListSessionsParams{StoreID: st.ID, Limit: min(d.Max, h.limits.MaxPageSize)})
		if err != nil {
			return nil, err
		}
		d.Sessions, d.More = pg.Data, pg.NextPage != ""
	}
	return d, nil
}

// createDream queues a dream from the form; the API's message is shown
// on the form again when it refuses.
func (h *Handler) createDream(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dreams == nil {
		return h.dreamsOff()
	}
	f := r.PostForm
	p := trove.CreateDreamParams{StoreID: f.Get("store"), SessionIDs: f["session"], Model: f.Get("model"), Instructions: f.Get("instructions"), OutputBehavior: f.Get("output")}
	if p.OutputBehavior == trove.OutputUpdateExisting {
		p.OutputStoreID = p.StoreID
	}
	dr, err := h.dreams.CreateDream(r.Context(), p)
	if err == nil {
		redirect(w, r, dreamURL(dr.ID), "dreamcreated")
		return nil
	}
	if trove.ErrorCode(err) != trove.EINVALID && trove.ErrorCode(err) != trove.ECONFLICT {
		return err
	}
	d, derr := h.newDreamData(r, p.StoreID)
	if derr != nil {
		return err
	}
	d.Model, d.Instructions, d.InPlace = p.Model, p.Instructions, p.OutputBehavior == trove.OutputUpdateExisting
	for _, id := range p.SessionIDs {
		d.Chosen[id] = true
	}
	h.render(w, r, status(err), "dream_new", s, &view{Title: "New dream", Error: trove.ErrorMessage(err), Data: d})
	return nil
}

// dreamChange is one path of a dream's change set with its line diff.
type dreamChange struct {
	Path  string
	Kind  string // added, removed, modified
	Lines []textdiff.Line
}

type dreamData struct {
	Dream   *trove.Dream
	Input   *trove.Store // nil when the store is gone
	Output  *trove.Store // nil when none yet or gone
	Changes []dreamChange
	// ChangesErr says why the change set could not be computed (a store
	// deleted since).
	ChangesErr string
}

// dreamPage shows a dream's fields, its error if it failed, and its change
// set: the difference between its input and output (dreamdiff.ChangeSet, as
// trove dreams diff shows it), memory by memory.
func (h *Handler) dreamPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dreams == nil {
		return h.dreamsOff()
	}
	ctx := r.Context()
	dr, err := h.dreams.GetDream(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	d := dreamData{Dream: dr}
	if st, err := h.svc.GetStore(ctx, dr.InputStoreID); err == nil {
		d.Input = st
	}
	if dr.OutputStoreID != "" {
		if st, err := h.svc.GetStore(ctx, dr.OutputStoreID); err == nil {
			d.Output = st
		}
	}
	changes, err := dreamdiff.ChangeSet(ctx, h.svc, dr)
	switch trove.ErrorCode(err) {
	case "":
	case trove.ENOTFOUND:
		d.ChangesErr = "The change set cannot be shown: " + trove.ErrorMessage(err) + "."
	default:
		return err
	}
	for _, c := range changes {
		kind, old, new := "modified", "", ""
		oldLabel, newLabel := "input"+c.Path, "output"+c.Path
		switch {
		case c.Old == nil:
			kind, new, oldLabel = "added", *c.New, "/dev/null"
		case c.New == nil:
			kind, old, newLabel = "removed", *c.Old, "/dev/null"
		default:
			old, new = *c.Old, *c.New
		}
		d.Changes = append(d.Changes, dreamChange{Path: c.Path, Kind: kind, Lines: textdiff.Lines(oldLabel, newLabel, old, new)})
	}
	h.render(w, r, http.StatusOK, "dream", s, &view{Title: "Dream " + dr.ID, Notice: notice(r), Data: d})
	return nil
}

func (h *Handler) cancelDream(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dreams == nil {
		return h.dreamsOff()
	}
	dr, err := h.dreams.CancelDream(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	redirect(w, r, dreamURL(dr.ID), "dreamcanceled")
	return nil
}

func (h *Handler) archiveDream(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dreams == nil {
		return h.dreamsOff()
	}
	dr, err := h.dreams.ArchiveDream(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	redirect(w, r, dreamURL(dr.ID), "dreamarchived")
	return nil
}

func dreamURL(id string) string { return Prefix + "dreams/" + url.PathEscape(id) }
