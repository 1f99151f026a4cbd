package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/trovehq/trove"
)

// Directory operations (trove.DirectoryService), a Trove extension:
//
//	POST /trove/v1/memory_stores/{memory_store_id}/directories/rename
//	     {"from": "/a", "to": "/b", "expect": [{"memory_id": "mem_…", "content_sha256": "…"}]}
//	POST /trove/v1/memory_stores/{memory_store_id}/directories/delete
//	     {"path": "/a", "expect": […]}
//
// Both answer {"data": [memory, …]} (basic view, ascending old paths).
// "expect" is optional; when present (even empty) the memories below the
// directory must be exactly those it names, with those hashes.

// directoriesHeader marks every answer of a directory endpoint, errors
// included, so a client can tell "the server has no such endpoint" (a 404
// or 405 without it) from "no such store or directory" (a 404 with it).
const directoriesHeader = "Trove-Directories"

type wireExpectItem struct {
	MemoryID      *string `json:"memory_id"`
	ContentSHA256 *string `json:"content_sha256"`
}

type wireRenameDirectory struct {
	From   *string           `json:"from"`
	To     *string           `json:"to"`
	Expect *[]wireExpectItem `json:"expect,omitempty"`
}

type wireDeleteDirectory struct {
	Path   *string           `json:"path"`
	Expect *[]wireExpectItem `json:"expect,omitempty"`
}

type wireDirectoryChange struct {
	Data []wireMemory `json:"data"`
}

// expectFromWire converts "expect": nil when absent or null, else every
// item with both fields present.
func expectFromWire(in *[]wireExpectItem) ([]trove.MemoryPrecondition, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]trove.MemoryPrecondition, len(*in))
	for i, e := range *in {
		if e.MemoryID == nil || e.ContentSHA256 == nil {
			return nil, trove.Errorf(trove.EINVALID, "expect[%d] needs memory_id and content_sha256", i)
		}
		if !validSHA256(*e.ContentSHA256) {
			return nil, shaError(fmt.Sprintf("expect[%d].content_sha256", i), *e.ContentSHA256)
		}
		out[i] = trove.MemoryPrecondition{MemoryID: *e.MemoryID, SHA256: *e.ContentSHA256}
	}
	return out, nil
}

func expectToWire(in []trove.MemoryPrecondition) *[]wireExpectItem {
	if in == nil {
		return nil
	}
	out := make([]wireExpectItem, len(in))
	for i, e := range in {
		out[i] = wireExpectItem{MemoryID: &e.MemoryID, ContentSHA256: &e.SHA256}
	}
	return &out
}

func (s *Server) sendDirectoryChange(w http.ResponseWriter, c *trove.DirectoryChange) error {
	out := wireDirectoryChange{Data: make([]wireMemory, len(c.Memories))}
	for i := range c.Memories {
		m := c.Memories[i]
		m.Content = nil
		out.Data[i] = memoryToWire(&m)
	}
	return s.ok(w, &out)
}

func (s *Server) renameDirectory(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set(directoriesHeader, "1")
	var body wireRenameDirectory
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.From == nil || body.To == nil {
		return trove.Errorf(trove.EINVALID, "from and to are required")
	}
	expect, err := expectFromWire(body.Expect)
	if err != nil {
		return err
	}
	c, err := s.svc.RenameDirectory(r.Context(), r.PathValue("memory_store_id"), trove.RenameDirectoryParams{From: *body.From, To: *body.To, Expect: expect})
	if err != nil {
		return err
	}
	return s.sendDirectoryChange(w, c)
}

func (s *Server) deleteDirectory(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set(directoriesHeader, "1")
	var body wireDeleteDirectory
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Path == nil {
		return trove.Errorf(trove.EINVALID, "path is required")
	}
	expect, err := expectFromWire(body.Expect)
	if err != nil {
		return err
	}
	c, err := s.svc.DeleteDirectory(r.Context(), r.PathValue("memory_store_id"), trove.DeleteDirectoryParams{Path: *body.Path, Expect: expect})
	if err != nil {
		return err
	}
	return s.sendDirectoryChange(w, c)
}

// Client side.

var _ trove.DirectoryService = (*Client)(nil)

// httpStatusError is the cause of a *trove.Error built from a /trove/v1
// answer: the request and the answer's status and marker header.
type httpStatusError struct {
	method, path string
	status       int
	statusText   string
	directories  bool // the answer carried directoriesHeader
	changes      bool // the answer carried changesHeader
	search       bool // the answer carried searchHeader
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.method, e.path, e.statusText)
}

// RenameDirectory renames a directory on the server in one transaction
// (trove.DirectoryService). Against a server without the endpoint it
// returns an ENOTFOUND *trove.Error for which errors.Is(err,
// errors.ErrUnsupported) holds; the caller then renames one memory at a
// time.
func (c *Client) RenameDirectory(ctx context.Context, storeID string, p trove.RenameDirectoryParams) (*trove.DirectoryChange, error) {
	for _, q := range []string{p.From, p.To} {
		if err := checkPathUTF8(q); err != nil {
			return nil, err
		}
	}
	body := wireRenameDirectory{From: &p.From, To: &p.To, Expect: expectToWire(p.Expect)}
	return c.directoryOp(ctx, storeID, "rename", &body)
}

// DeleteDirectory deletes a directory on the server in one transaction;
// errors.ErrUnsupported as in RenameDirectory.
func (c *Client) DeleteDirectory(ctx context.Context, storeID string, p trove.DeleteDirectoryParams) (*trove.DirectoryChange, error) {
	if err := checkPathUTF8(p.Path); err != nil {
		return nil, err
	}
	body := wireDeleteDirectory{Path: &p.Path, Expect: expectToWire(p.Expect)}
	return c.directoryOp(ctx, storeID, "delete", &body)
}

func (c *Client) directoryOp(ctx context.Context, storeID, op string, body any) (*trove.DirectoryChange, error) {
	if storeID == "" {
		return nil, errStoreNotFound("")
	}
	path := "/trove/v1/memory_stores/" + url.PathEscape(storeID) + "/directories/" + op
	var out wireDirectoryChange
	_, err := c.do(ctx, http.MethodPost, path, nil, body, &out)
	if err != nil {
		var se *httpStatusError
		if !errors.As(err, &se) || se.directories || (se.status != http.StatusNotFound && se.status != http.StatusMethodNotAllowed) {
			return nil, err
		}
		// No endpoint answered: an older server, or another memory
		// stores API. If the store exists, the operation is what is
		// missing; otherwise the store's own error stands.
		if _, gerr := c.GetStore(ctx, storeID); gerr != nil {
			return nil, gerr
		}
		return nil, &trove.Error{
			Code:    trove.ENOTFOUND,
			Message: fmt.Sprintf("the server does not offer directory operations (POST %s answered %s); rename or delete one memory at a time", path, se.statusText),
			Err:     fmt.Errorf("%w: %w", errors.ErrUnsupported, se),
		}
	}
	change := &trove.DirectoryChange{Memories: make([]trove.Memory, len(out.Data))}
	for i, m := range out.Data {
		change.Memories[i] = trove.Memory{
			ID: m.ID, StoreID: m.MemoryStoreID, Path: m.Path, SizeBytes: m.ContentSizeBytes,
			SHA256: m.ContentSHA256, VersionID: m.MemoryVersionID,
			CreatedAt: parseTime(m.CreatedAt), UpdatedAt: parseTime(m.UpdatedAt),
		}
	}
	return change, nil
}

func errStoreNotFound(id string) error {
	return trove.Errorf(trove.ENOTFOUND, "memory store %q not found", id)
}
