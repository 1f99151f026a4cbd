package console

import (
	"net/http"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/textdiff"
)

// historyPageSize is how many versions one history page shows.
const historyPageSize = 100

type historyData struct {
	Store    *trove.Store
	MemoryID string
	Current  *trove.Memory // nil when the memory is deleted
	Versions []trove.MemoryVersion
	Next     string
}

// historyPage lists a memory's versions newest first, a page at a time,
// with the controls to diff any two, restore one or redact one.
func (h *Handler) historyPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	mid := r.PathValue("mid")
	pg, err := h.svc.ListVersions(ctx, st.ID, trove.ListVersionsParams{MemoryID: mid, Limit: historyPageSize, Cursor: query(r).Get("cursor")})
	if err != nil {
		return err
	}
	d := historyData{Store: st, MemoryID: mid, Versions: pg.Data, Next: pg.NextPage}
	cur, err := h.svc.GetMemory(ctx, st.ID, mid, trove.ViewBasic)
	switch trove.ErrorCode(err) {
	case "":
		d.Current = cur
	case trove.ENOTFOUND:
		if len(pg.Data) == 0 && query(r).Get("cursor") == "" {
			return err
		}
	default:
		return err
	}
	title := "History"
	if cur != nil {
		title = "History of " + cur.Path
	}
	h.render(w, r, http.StatusOK, "history", s, &view{Title: title, Notice: notice(r), Data: d})
	return nil
}

type diffData struct {
	Store    *trove.Store
	MemoryID string
	A, B     string // labels
	Lines    []textdiff.Line
}

// side returns the text and label of one side of a diff: a version ID or
// "current".
func (h *Handler) side(r *http.Request, storeID, memoryID, which string) (text, label string, err error) {
	if which == "current" {
		m, err := h.svc.GetMemory(r.Context(), storeID, memoryID, trove.ViewFull)
		if err != nil {
			return "", "", err
		}
		return *m.Content, m.Path + " (current)", nil
	}
	v, err := h.svc.GetVersion(r.Context(), storeID, which, trove.ViewFull)
	if err != nil {
		return "", "", err
	}
	if v.MemoryID != memoryID {
		return "", "", trove.Errorf(trove.EINVALID, "version %s belongs to another memory", which)
	}
	label = v.ID
	if v.Path != nil {
		label = *v.Path + " @ " + v.ID
	}
	switch {
	case v.RedactedAt != nil:
		label += " (redacted)"
	case v.Operation == trove.OpDeleted:
		label += " (deleted)"
	}
	if v.Content != nil {
		text = *v.Content
	}
	return text, label, nil
}

func (h *Handler) diffPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	st, err := h.svc.GetStore(r.Context(), r.PathValue("sid"))
	if err != nil {
		return err
	}
	mid := r.PathValue("mid")
	q := query(r)
	a, b := q.Get("a"), q.Get("b")
	if a == "" || b == "" {
		return trove.Errorf(trove.EINVALID, "choose two versions to compare (a and b)")
	}
	at, al, err := h.side(r, st.ID, mid, a)
	if err != nil {
		return err
	}
	bt, bl, err := h.side(r, st.ID, mid, b)
	if err != nil {
		return err
	}
	d := diffData{Store: st, MemoryID: mid, A: al, B: bl, Lines: textdiff.Lines(al, bl, at, bt)}
	h.render(w, r, http.StatusOK, "diff", s, &view{Title: "Difference", Data: d})
	return nil
}

type versionData struct {
	Store   *trove.Store
	Version *trove.MemoryVersion
	Current *trove.Memory // nil when the memory is deleted
}

func (h *Handler) versionPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	v, err := h.svc.GetVersion(ctx, st.ID, r.PathValue("vid"), trove.ViewFull)
	if err != nil {
		return err
	}
	d := versionData{Store: st, Version: v}
	cur, err := h.svc.GetMemory(ctx, st.ID, v.MemoryID, trove.ViewBasic)
	switch trove.ErrorCode(err) {
	case "":
		d.Current = cur
	case trove.ENOTFOUND:
	default:
		return err
	}
	h.render(w, r, http.StatusOK, "version", s, &view{Title: "Version " + v.ID, Notice: notice(r), Data: d})
	return nil
}

// restoreVersion writes a version's content (and path) as a new version of
// its memory, conditional on the memory's hash shown when the user chose
// (sha256); a memory deleted since is created again at the version's path.
func (h *Handler) restoreVersion(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	sid := r.PathValue("sid")
	v, err := h.svc.GetVersion(ctx, sid, r.PathValue("vid"), trove.ViewFull)
	if err != nil {
		return err
	}
	if v.Content == nil || v.Path == nil {
		return trove.Errorf(trove.EINVALID, "this version holds no content to restore (it is a deletion or was redacted)")
	}
	sha := r.PostFormValue("sha256")
	if sha == "" {
		m, err := h.svc.CreateMemory(ctx, sid, trove.CreateMemoryParams{Path: *v.Path, Content: *v.Content})
		if err != nil {
			return err
		}
		redirect(w, r, memoryURL(sid, m.ID), "restored")
		return nil
	}
	m, err := h.svc.UpdateMemory(ctx, sid, v.MemoryID, trove.UpdateMemoryParams{Content: v.Content, Path: v.Path, PreconditionSHA256: sha})
	if err != nil {
		if trove.ErrorCode(err) == trove.EPRECONDITION {
			return trove.Errorf(trove.EPRECONDITION, "the memory changed since you opened its history, so nothing was restored; open the history again and compare with the new content")
		}
		return err
	}
	redirect(w, r, memoryURL(sid, m.ID), "restored")
	return nil
}

func (h *Handler) redactVersion(w http.ResponseWriter, r *http.Request, s *signed) error {
	sid, vid := r.PathValue("sid"), r.PathValue("vid")
	if r.PostFormValue("confirm") != "yes" {
		return trove.Errorf(trove.EINVALID, "redaction erases this version's content and path for good: tick the confirmation box to redact")
	}
	if _, err := h.svc.RedactVersion(r.Context(), sid, vid); err != nil {
		return err
	}
	redirect(w, r, versionURL(sid, vid), "redacted")
	return nil
}
