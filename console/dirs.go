package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/trovehq/trove"
)

// formDir reads a directory path from a form field: the tree's "/a/b/" or a
// typed "/a/b" or "a/b", answered as "/a/b". The root and an empty field are
// EINVALID: the store itself is renamed in its settings and deleted whole.
func formDir(r *http.Request, field string) (string, error) {
	d := strings.TrimSpace(r.PostFormValue(field))
	d = strings.TrimRight(d, "/")
	if d != "" && !strings.HasPrefix(d, "/") {
		d = "/" + d
	}
	if d == "" {
		return "", trove.Errorf(trove.EINVALID, "name a directory below the store's root (like /notes/2024)")
	}
	return d, nil
}

// renameDir moves the directory "dir" to "to" in one transaction
// (trove.DirectoryService: every memory below it keeps its ID and history
// and gets one version, or none changes) and shows the directory at its
// new place.
func (h *Handler) renameDir(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dirs == nil {
		return trove.Errorf(trove.EINVALID, "this server cannot rename directories")
	}
	sid := r.PathValue("sid")
	from, err := formDir(r, "dir")
	if err != nil {
		return err
	}
	to, err := formDir(r, "to")
	if err != nil {
		return err
	}
	if _, err := h.dirs.RenameDirectory(r.Context(), sid, trove.RenameDirectoryParams{From: from, To: to}); err != nil {
		return err
	}
	redirect(w, r, storeURL(sid)+"?dir="+url.QueryEscape(to+"/"), "dirmoved")
	return nil
}

// deleteDir deletes every memory below the directory "dir" in one
// transaction, once "confirm" repeats the directory's path, and shows the
// parent directory.
func (h *Handler) deleteDir(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.dirs == nil {
		return trove.Errorf(trove.EINVALID, "this server cannot delete directories")
	}
	sid := r.PathValue("sid")
	dir, err := formDir(r, "dir")
	if err != nil {
		return err
	}
	if c := strings.TrimRight(strings.TrimSpace(r.PostFormValue("confirm")), "/"); c != dir {
		return trove.Errorf(trove.EINVALID, "type the directory's path (%s) exactly to delete every memory below it", dir)
	}
	if _, err := h.dirs.DeleteDirectory(r.Context(), sid, trove.DeleteDirectoryParams{Path: dir}); err != nil {
		return err
	}
	redirect(w, r, storeURL(sid)+"?dir="+url.QueryEscape(dir[:strings.LastIndexByte(dir, '/')+1]), "dirdeleted")
	return nil
}
