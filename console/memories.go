package console

import (
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/textdiff"
)

// treeData is one directory level of a store's tree: its direct children
// (memories and folded subdirectories), one page of them.
type treeData struct {
	StoreID string
	Dir     string // "/" or "/a/b/"
	Items   []trove.MemoryListItem
	Next    string // cursor of the next page of this directory
}

// tree lists the direct children of dir (a "/"-terminated prefix) with one
// depth-1 listing page: the directories below are folded into prefixes and
// loaded when expanded, so a level costs one indexed range read whatever
// the store's size.
func (h *Handler) tree(r *http.Request, storeID, dir, cursor string) (*treeData, error) {
	if dir == "" {
		dir = "/"
	}
	pg, err := h.svc.ListMemories(r.Context(), storeID, trove.ListMemoriesParams{PathPrefix: dir, Depth: 1, Limit: h.limits.MaxPageSize, Cursor: cursor})
	if err != nil {
		return nil, err
	}
	return &treeData{StoreID: storeID, Dir: dir, Items: pg.Data, Next: pg.NextPage}, nil
}

// treeFragment serves one directory level as HTML for the script that
// expands directories in place.
func (h *Handler) treeFragment(w http.ResponseWriter, r *http.Request, s *signed) error {
	q := query(r)
	t, err := h.tree(r, r.PathValue("sid"), q.Get("dir"), q.Get("cursor"))
	if err != nil {
		return err
	}
	return h.fragment(w, r, "store", "tree-items", t)
}

type memoryData struct {
	Store  *trove.Store
	Memory *trove.Memory
	CRLF   bool // the content uses CRLF line ends (kept on save)
	// Markdown: the path names a Markdown file, so the page offers a
	// preview; Preview is it rendered (renderMarkdown) when asked for with
	// ?view=preview, else empty.
	Markdown bool
	Preview  template.HTML
	// The edit form's path and content: the memory's, or what the user
	// sent when a save was refused (so nothing typed is lost).
	Path, Content string
}

func (h *Handler) memoryPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	st, m, err := h.storeAndMemory(r)
	if err != nil {
		return err
	}
	d := memoryData{Store: st, Memory: m, CRLF: strings.Contains(*m.Content, "\r\n"), Path: m.Path, Content: *m.Content, Markdown: isMarkdown(m.Path)}
	if d.Markdown && query(r).Get("view") == "preview" {
		if d.Preview, err = renderMarkdown(*m.Content); err != nil {
			return err
		}
	}
	h.render(w, r, http.StatusOK, "memory", s, &view{Title: m.Path, Notice: notice(r), Data: d})
	return nil
}

func (h *Handler) storeAndMemory(r *http.Request) (*trove.Store, *trove.Memory, error) {
	st, err := h.svc.GetStore(r.Context(), r.PathValue("sid"))
	if err != nil {
		return nil, nil, err
	}
	m, err := h.svc.GetMemory(r.Context(), st.ID, r.PathValue("mid"), trove.ViewFull)
	if err != nil {
		return nil, nil, err
	}
	return st, m, nil
}

// formContent returns the content field as the memory should hold it: a
// browser sends a textarea's line ends as CRLF, so they become LF again
// unless the form says the content used CRLF.
func formContent(r *http.Request) string {
	c := r.PostFormValue("content")
	if r.PostFormValue("crlf") != "1" {
		c = strings.ReplaceAll(c, "\r\n", "\n")
	}
	return c
}

type newMemoryData struct {
	Store   *trove.Store
	Path    string
	Content string
}

func (h *Handler) newMemoryPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	st, err := h.svc.GetStore(r.Context(), r.PathValue("sid"))
	if err != nil {
		return err
	}
	dir := query(r).Get("dir")
	if dir == "" {
		dir = "/"
	}
	h.render(w, r, http.StatusOK, "new", s, &view{Title: "New memory", Data: newMemoryData{Store: st, Path: dir}})
	return nil
}

func (h *Handler) createMemory(w http.ResponseWriter, r *http.Request, s *signed) error {
	st, err := h.svc.GetStore(r.Context(), r.PathValue("sid"))
	if err != nil {
		return err
	}
	p, c := r.PostFormValue("path"), formContent(r)
	m, err := h.svc.CreateMemory(r.Context(), st.ID, trove.CreateMemoryParams{Path: p, Content: c})
	if err != nil {
		h.render(w, r, status(err), "new", s, &view{Title: "New memory", Error: "Could not create the memory: " + trove.ErrorMessage(err), Data: newMemoryData{Store: st, Path: p, Content: c}})
		return nil
	}
	redirect(w, r, memoryURL(st.ID, m.ID), "created")
	return nil
}

// conflictData is the page shown when a save lost a race: the memory as
// the store now holds it, what the user tried to save, and the difference.
type conflictData struct {
	Store   *trove.Store
	Theirs  *trove.Memory // current
	Mine    string
	MyPath  string
	Diff    []textdiff.Line
	CRLF    bool
	Deleted bool // the memory was deleted meanwhile
}

func (h *Handler) updateMemory(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	mid := r.PathValue("mid")
	sha := r.PostFormValue("sha256")
	if sha == "" {
		return trove.Errorf(trove.EINVALID, "the form lacks the content hash it was read with; reload the memory and edit again")
	}
	content, p := formContent(r), r.PostFormValue("path")
	m, err := h.svc.UpdateMemory(ctx, st.ID, mid, trove.UpdateMemoryParams{Content: &content, Path: &p, PreconditionSHA256: sha})
	switch trove.ErrorCode(err) {
	case "":
		n := "saved"
		if m.SHA256 == sha && m.Path == p && r.PostFormValue("path_was") == p {
			n = "unchanged"
		}
		redirect(w, r, memoryURL(st.ID, m.ID), n)
		return nil
	case trove.EPRECONDITION, trove.ENOTFOUND:
		cur, gerr := h.svc.GetMemory(ctx, st.ID, mid, trove.ViewFull)
		d := conflictData{Store: st, Mine: content, MyPath: p, CRLF: r.PostFormValue("crlf") == "1"}
		switch trove.ErrorCode(gerr) {
		case "":
			d.Theirs = cur
			d.Diff = textdiff.Lines(cur.Path+" (in the store now)", p+" (yours)", *cur.Content, content)
		case trove.ENOTFOUND:
			d.Deleted = true
		default:
			return gerr
		}
		h.render(w, r, http.StatusConflict, "conflict", s, &view{Title: "Conflict", Data: d})
		return nil
	case trove.EINVALID, trove.EPATHCONFLICT, trove.EFORBIDDEN, trove.ETOOLARGE:
		// Refused as asked: the page again, with the reason and the
		// user's text and path kept in the form.
		cur, gerr := h.svc.GetMemory(ctx, st.ID, mid, trove.ViewFull)
		if gerr != nil {
			return err
		}
		h.render(w, r, status(err), "memory", s, &view{Title: cur.Path, Error: "Not saved: " + trove.ErrorMessage(err),
			Data: memoryData{Store: st, Memory: cur, CRLF: r.PostFormValue("crlf") == "1", Path: p, Content: content}})
		return nil
	}
	return err
}

func (h *Handler) deleteMemory(w http.ResponseWriter, r *http.Request, s *signed) error {
	sid, mid := r.PathValue("sid"), r.PathValue("mid")
	sha := r.PostFormValue("sha256")
	if sha == "" {
		return trove.Errorf(trove.EINVALID, "the form lacks the content hash it was read with; reload the memory")
	}
	if err := h.svc.DeleteMemory(r.Context(), sid, mid, sha); err != nil {
		if trove.ErrorCode(err) == trove.EPRECONDITION {
			return trove.Errorf(trove.EPRECONDITION, "the memory changed since you opened it, so it was not deleted; open it again to see the new content")
		}
		return err
	}
	redirect(w, r, storeURL(sid), "deleted")
	return nil
}

func storeURL(id string) string { return Prefix + "stores/" + url.PathEscape(id) }

func memoryURL(sid, mid string) string { return storeURL(sid) + "/memories/" + url.PathEscape(mid) }

func versionURL(sid, vid string) string { return storeURL(sid) + "/versions/" + url.PathEscape(vid) }
