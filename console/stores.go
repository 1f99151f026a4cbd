package console

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
)

// storeRow is one line of the stores list.
type storeRow struct {
	trove.Store
	Memories   int
	SizeBytes  int64
	Versions   int64     // -1: unknown (services without trove.StoreStatsService)
	LastChange time.Time // newest version, else the store's UpdatedAt
	Partial    bool      // counting stopped at the store limit
}

type storesData struct {
	Stores   []storeRow
	Archived bool   // archived stores shown
	Next     string // cursor of the next page
	// The create form refilled after a refusal; Duplicate when the name
	// was refused as a live store's (the form then offers to allow it).
	Name, Description string
	Duplicate         bool
}

// storeStats finds a store's live memory count, their bytes and its
// version count, and its last change from the newest version. With
// services that keep counters (trove.StoreStatsService: core, and
// httpapi.Client) that is one read whatever the store holds; other
// services' memories are counted by paging the basic listing (at most the
// store limit of memories).
func (h *Handler) storeStats(r *http.Request, st *trove.Store) (storeRow, error) {
	row := storeRow{Store: *st, LastChange: st.UpdatedAt, Versions: -1}
	ctx := r.Context()
	if ss, ok := h.svc.(trove.StoreStatsService); ok {
		c, err := ss.StoreStats(ctx, st.ID)
		if err != nil {
			return row, err
		}
		row.Memories, row.SizeBytes, row.Versions = c.MemoryCount, c.ContentBytes, c.VersionCount
	} else {
		for pg, err := range trove.Pages(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
			return h.svc.ListMemories(ctx, st.ID, trove.ListMemoriesParams{Limit: h.limits.MaxPageSize, Cursor: cursor})
		}) {
			if err != nil {
				return row, err
			}
			for _, it := range pg.Data {
				if it.Memory != nil {
					row.Memories++
					row.SizeBytes += int64(it.Memory.SizeBytes)
				}
			}
			if pg.NextPage != "" && row.Memories >= h.limits.MaxMemoriesPerStore {
				row.Partial = true
				break
			}
		}
	}
	vs, err := h.svc.ListVersions(ctx, st.ID, trove.ListVersionsParams{Limit: 1})
	if err != nil {
		return row, err
	}
	if len(vs.Data) > 0 && vs.Data[0].CreatedAt.After(row.LastChange) {
		row.LastChange = vs.Data[0].CreatedAt
	}
	return row, nil
}

// storesPage lists stores; each row's counts come from statsJSON, fetched
// by the page's script, so that the list costs one listing whatever the
// stores hold.
func (h *Handler) storesPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	q := query(r)
	archived := q.Get("archived") == "1"
	pg, err := h.svc.ListStores(r.Context(), trove.ListStoresParams{Limit: 50, Cursor: q.Get("cursor"), IncludeArchived: archived})
	if err != nil {
		return err
	}
	d := storesData{Archived: archived, Next: pg.NextPage}
	for _, st := range pg.Data {
		d.Stores = append(d.Stores, storeRow{Store: st, LastChange: st.UpdatedAt})
	}
	h.render(w, r, http.StatusOK, "stores", s, &view{Title: "Memory stores", Notice: notice(r), Data: d})
	return nil
}

// statsJSON answers a store's live memory count, their total size and its
// last change, formatted for display, as JSON for the page's script.
func (h *Handler) statsJSON(w http.ResponseWriter, r *http.Request, s *signed) error {
	st, err := h.svc.GetStore(r.Context(), r.PathValue("sid"))
	if err != nil {
		return err
	}
	row, err := h.storeStats(r, st)
	if err != nil {
		return err
	}
	n := strconv.Itoa(row.Memories)
	if row.Partial {
		n += "+"
	}
	versions := "?"
	if row.Versions >= 0 {
		versions = strconv.FormatInt(row.Versions, 10)
	}
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(map[string]string{
		"memories": n, "size": humanBytes(int(row.SizeBytes)), "versions": versions,
		"last_change":     row.LastChange.UTC().Format(utcLayout),
		"last_change_at":  row.LastChange.UTC().Format(time.RFC3339),
		"last_change_ago": ago(h.now(), row.LastChange),
	})
}

// createStore creates a store; a name that a live store already has is
// refused unless the form allows the duplicate (trove.CheckStoreNameFree).
func (h *Handler) createStore(w http.ResponseWriter, r *http.Request, s *signed) error {
	name, desc := r.PostFormValue("name"), r.PostFormValue("description")
	var st *trove.Store
	var err error
	if r.PostFormValue("allow_duplicate") != "yes" {
		err = trove.CheckStoreNameFree(r.Context(), h.svc, name)
	}
	if err == nil {
		st, err = h.svc.CreateStore(r.Context(), trove.CreateStoreParams{Name: name, Description: desc})
	}
	if err != nil {
		// Back to the list with the message and what was typed.
		pg, lerr := h.svc.ListStores(r.Context(), trove.ListStoresParams{Limit: 50})
		d := storesData{Name: name, Description: desc, Duplicate: trove.IsStoreNameTaken(err)}
		if lerr == nil {
			for _, x := range pg.Data {
				d.Stores = append(d.Stores, storeRow{Store: x, LastChange: x.UpdatedAt})
			}
		}
		h.render(w, r, status(err), "stores", s, &view{Title: "Memory stores", Error: "Could not create the store: " + trove.ErrorMessage(err), Data: d})
		return nil
	}
	redirect(w, r, storeURL(st.ID), "created")
	return nil
}

type storeData struct {
	Store    *trove.Store
	Metadata string // "key=value" lines
	Tree     *treeData
	History  bool // the time machine pages exist
	Dirs     bool // directories can be renamed and deleted (trove.DirectoryService)
}

func (h *Handler) storePage(w http.ResponseWriter, r *http.Request, s *signed) error {
	st, err := h.svc.GetStore(r.Context(), r.PathValue("sid"))
	if err != nil {
		return err
	}
	dir := query(r).Get("dir")
	tree, err := h.tree(r, st.ID, dir, query(r).Get("cursor"))
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "store", s, &view{Title: st.Name, Notice: notice(r), Data: storeData{Store: st, Metadata: formatMetadata(st.Metadata), Tree: tree, History: h.hist != nil, Dirs: h.dirs != nil}})
	return nil
}

// formatMetadata writes metadata as the settings form shows it: one
// key=value per line, sorted by key. A key or value that would not read
// back as itself (a line break or other control character, invalid UTF-8,
// a leading double quote, an "=" in a key) is written Go-quoted.
func formatMetadata(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(metadataField(k, true))
		b.WriteByte('=')
		b.WriteString(metadataField(m[k], false))
		b.WriteByte('\n')
	}
	return b.String()
}

// metadataField is s as formatMetadata writes it: as is, or Go-quoted.
func metadataField(s string, key bool) string {
	quote := strings.HasPrefix(s, `"`) || !utf8.ValidString(s) || key && strings.Contains(s, "=")
	for _, r := range s {
		quote = quote || r < 0x20 || r == 0x7f
	}
	if quote {
		return strconv.Quote(s)
	}
	return s
}

// parseMetadata reads what formatMetadata writes, as a user edited it:
// "key=value" lines (CRLF or LF; blank lines ignored), a key or value that
// starts with a double quote read as a Go-quoted string.
func parseMetadata(s string) (map[string]string, error) {
	out := map[string]string{}
	for i, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		k, v, ok := parseMetadataLine(line)
		if !ok || k == "" {
			return nil, trove.Errorf(trove.EINVALID, "metadata line %d must be key=value (a key or value with line breaks, or starting with a double quote, is written as a Go-quoted string), got %q", i+1, line)
		}
		if _, dup := out[k]; dup {
			return nil, trove.Errorf(trove.EINVALID, "metadata key %q appears twice", k)
		}
		out[k] = v
	}
	return out, nil
}

// parseMetadataLine splits one "key=value" line, unquoting either side
// when it starts with a double quote.
func parseMetadataLine(line string) (k, v string, ok bool) {
	if strings.HasPrefix(line, `"`) {
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			return "", "", false
		}
		if k, err = strconv.Unquote(q); err != nil {
			return "", "", false
		}
		if line, ok = strings.CutPrefix(line[len(q):], "="); !ok {
			return "", "", false
		}
	} else if k, line, ok = strings.Cut(line, "="); !ok {
		return "", "", false
	}
	if strings.HasPrefix(line, `"`) {
		v, err := strconv.Unquote(line)
		return k, v, err == nil
	}
	return k, line, true
}

func (h *Handler) updateStore(w http.ResponseWriter, r *http.Request, s *signed) error {
	id := r.PathValue("sid")
	st, err := h.svc.GetStore(r.Context(), id)
	if err != nil {
		return err
	}
	name, desc := r.PostFormValue("name"), r.PostFormValue("description")
	md, err := parseMetadata(r.PostFormValue("metadata"))
	if err != nil {
		return err
	}
	p := trove.UpdateStoreParams{Metadata: map[string]*string{}}
	if name != st.Name {
		p.Name = &name
	}
	if desc != st.Description {
		p.Description = &desc
	}
	for k := range st.Metadata {
		if _, ok := md[k]; !ok {
			p.Metadata[k] = nil
		}
	}
	for k, v := range md {
		if old, ok := st.Metadata[k]; !ok || old != v {
			p.Metadata[k] = &v
		}
	}
	if _, err := h.svc.UpdateStore(r.Context(), id, p); err != nil {
		return err
	}
	redirect(w, r, storeURL(id)+"#settings", "saved")
	return nil
}

func (h *Handler) archiveStore(w http.ResponseWriter, r *http.Request, s *signed) error {
	id := r.PathValue("sid")
	if r.PostFormValue("confirm") != "yes" {
		return trove.Errorf(trove.EINVALID, "archiving is one-way: tick the confirmation box to archive the store")
	}
	if _, err := h.svc.ArchiveStore(r.Context(), id); err != nil {
		return err
	}
	redirect(w, r, storeURL(id), "archived")
	return nil
}

func (h *Handler) deleteStore(w http.ResponseWriter, r *http.Request, s *signed) error {
	id := r.PathValue("sid")
	st, err := h.svc.GetStore(r.Context(), id)
	if err != nil {
		return err
	}
	if r.PostFormValue("confirm_name") != st.Name {
		return trove.Errorf(trove.EINVALID, "type the store's name exactly to delete it and all its memories and versions")
	}
	if err := h.svc.DeleteStore(r.Context(), id); err != nil {
		return err
	}
	redirect(w, r, Prefix+"stores", "deleted")
	return nil
}
