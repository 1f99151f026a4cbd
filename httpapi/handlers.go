package httpapi

import (
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// Memory stores.

func (s *Server) createStore(w http.ResponseWriter, r *http.Request) error {
	var body wireCreateStore
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Name == nil {
		return trove.Errorf(trove.EINVALID, "name is required")
	}
	p := trove.CreateStoreParams{Name: *body.Name}
	if body.Description != nil {
		p.Description = *body.Description
	}
	if body.Metadata != nil {
		p.Metadata = make(map[string]string, len(body.Metadata))
		for k, v := range body.Metadata {
			if v == nil {
				return &trove.Error{Code: trove.EINVALID, Message: "metadata values must be strings; " + k + " is null", DetailCode: "invalid_metadata"}
			}
			p.Metadata[k] = *v
		}
	}
	st, err := s.svc.CreateStore(r.Context(), p)
	if err != nil {
		return err
	}
	return s.ok(w, storeToWire(st))
}

func (s *Server) getStore(w http.ResponseWriter, r *http.Request) error {
	st, err := s.svc.GetStore(r.Context(), r.PathValue("memory_store_id"))
	if err != nil {
		return err
	}
	return s.ok(w, storeToWire(st))
}

func (s *Server) updateStore(w http.ResponseWriter, r *http.Request) error {
	var body wireUpdateStore
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	p := trove.UpdateStoreParams{Name: body.Name, Metadata: body.Metadata}
	// description: absent leaves it, null clears it like "" (the rule of
	// the SDK's update bodies: "send empty string or null to clear").
	desc, set, err := nullableString("description", body.Description)
	if err != nil {
		return err
	}
	if set {
		p.Description = &desc
	}
	st, err := s.svc.UpdateStore(r.Context(), r.PathValue("memory_store_id"), p)
	if err != nil {
		return err
	}
	return s.ok(w, storeToWire(st))
}

func (s *Server) listStores(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	arch, err := queryBool(q, "include_archived")
	if err != nil {
		return err
	}
	tr, err := queryTimeRange(q)
	if err != nil {
		return err
	}
	page, err := s.svc.ListStores(r.Context(), trove.ListStoresParams{
		Limit: limit, Cursor: q.Get("page"), IncludeArchived: arch, CreatedAt: tr,
	})
	if err != nil {
		return err
	}
	out := wirePage[wireStore]{Data: make([]wireStore, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = storeToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

func (s *Server) deleteStore(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("memory_store_id")
	if err := s.svc.DeleteStore(r.Context(), id); err != nil {
		return err
	}
	return s.ok(w, wireDeleted{ID: id, Type: "memory_store_deleted"})
}

func (s *Server) archiveStore(w http.ResponseWriter, r *http.Request) error {
	st, err := s.svc.ArchiveStore(r.Context(), r.PathValue("memory_store_id"))
	if err != nil {
		return err
	}
	return s.ok(w, storeToWire(st))
}

// Memories.

func (s *Server) createMemory(w http.ResponseWriter, r *http.Request) error {
	view := queryView(w, r) // core checks it and applies the endpoint's default
	var body wireCreateMemory
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Path == nil {
		return trove.Errorf(trove.EINVALID, "path is required")
	}
	content, set, err := nullableString("content", body.Content)
	if err != nil {
		return err
	}
	if !set {
		return trove.Errorf(trove.EINVALID, "content is required: send \"\" for an empty memory")
	}
	p := trove.CreateMemoryParams{Path: *body.Path, View: view, Content: content} // null: an empty memory
	m, err := s.svc.CreateMemory(r.Context(), r.PathValue("memory_store_id"), p)
	if err != nil {
		return err
	}
	return s.writeMemory(w, m)
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) error {
	view := queryView(w, r) // core checks it and applies the endpoint's default
	m, err := s.svc.GetMemory(r.Context(), r.PathValue("memory_store_id"), r.PathValue("memory_id"), view)
	if err != nil {
		return err
	}
	return s.writeMemory(w, m)
}

func (s *Server) updateMemory(w http.ResponseWriter, r *http.Request) error {
	view := queryView(w, r) // core checks it and applies the endpoint's default
	var body wireUpdateMemory
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Content == nil && body.Path == nil {
		return trove.Errorf(trove.EINVALID, "set content, path or both")
	}
	p := trove.UpdateMemoryParams{Content: body.Content, Path: body.Path, View: view}
	if pc := body.Precondition; pc != nil {
		if pc.Type == nil || *pc.Type != "content_sha256" {
			return trove.Errorf(trove.EINVALID, "precondition.type must be \"content_sha256\"")
		}
		if pc.ContentSHA256 == nil {
			return trove.Errorf(trove.EINVALID, "precondition.content_sha256 is required")
		}
		if !validSHA256(*pc.ContentSHA256) {
			return shaError("precondition.content_sha256", *pc.ContentSHA256)
		}
		p.PreconditionSHA256 = *pc.ContentSHA256
	}
	m, err := s.svc.UpdateMemory(r.Context(), r.PathValue("memory_store_id"), r.PathValue("memory_id"), p)
	if err != nil {
		return err
	}
	return s.writeMemory(w, m)
}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	view := trove.View(q.Get("view")) // core checks it and applies the endpoint's default
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	depth, err := queryDepth(q)
	if err != nil {
		return err
	}
	page, err := s.svc.ListMemories(r.Context(), r.PathValue("memory_store_id"), trove.ListMemoriesParams{
		PathPrefix: q.Get("path_prefix"), Depth: depth, Limit: limit, Cursor: q.Get("page"), View: view,
	})
	if err != nil {
		return err
	}
	out := wirePage[any]{Data: make([]any, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i, it := range page.Data {
		switch {
		case it.Memory != nil:
			out.Data[i] = memoryToWire(it.Memory)
		case it.Prefix != nil:
			out.Data[i] = wirePrefix{Type: "memory_prefix", Path: it.Prefix.Path}
		default:
			return trove.Errorf(trove.EINTERNAL, "list item %d is neither a memory nor a prefix", i)
		}
	}
	return s.ok(w, &out)
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) error {
	expected, err := queryPrecondition(queryOf(w, r), "expected_content_sha256")
	if err != nil {
		return err
	}
	id := r.PathValue("memory_id")
	if err := s.svc.DeleteMemory(r.Context(), r.PathValue("memory_store_id"), id, expected); err != nil {
		return err
	}
	return s.ok(w, wireDeleted{ID: id, Type: "memory_deleted"})
}

// Memory versions.

func (s *Server) getVersion(w http.ResponseWriter, r *http.Request) error {
	view := queryView(w, r) // core checks it and applies the endpoint's default
	v, err := s.svc.GetVersion(r.Context(), r.PathValue("memory_store_id"), r.PathValue("memory_version_id"), view)
	if err != nil {
		return err
	}
	return s.ok(w, versionToWire(v))
}

func (s *Server) listVersions(w http.ResponseWriter, r *http.Request) error {
	page, err := s.listVersionsPage(w, r)
	if err != nil {
		return err
	}
	out := wirePage[wireVersion]{Data: make([]wireVersion, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = versionToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

// listVersionsPage reads a version listing's query and lists the page
// (the /v1 listing and the time machine's, which adds seq and hashes).
func (s *Server) listVersionsPage(w http.ResponseWriter, r *http.Request) (*trove.Page[trove.MemoryVersion], error) {
	q := queryOf(w, r)
	view := trove.View(q.Get("view")) // core checks it and applies the endpoint's default
	limit, err := queryLimit(q)
	if err != nil {
		return nil, err
	}
	op, err := queryOperation(q)
	if err != nil {
		return nil, err
	}
	tr, err := queryTimeRange(q)
	if err != nil {
		return nil, err
	}
	return s.svc.ListVersions(r.Context(), r.PathValue("memory_store_id"), trove.ListVersionsParams{
		MemoryID:         q.Get("memory_id"),
		SessionID:        q.Get("session_id"),
		APIKeyID:         q.Get("api_key_id"),
		ServiceAccountID: q.Get("service_account_id"),
		Operation:        op,
		CreatedAt:        tr,
		Limit:            limit,
		Cursor:           q.Get("page"),
		View:             view,
	})
}

func (s *Server) redactVersion(w http.ResponseWriter, r *http.Request) error {
	v, err := s.svc.RedactVersion(r.Context(), r.PathValue("memory_store_id"), r.PathValue("memory_version_id"))
	if err != nil {
		return err
	}
	return s.ok(w, versionToWire(v))
}

// Sessions (/trove/v1).

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var body wireCreateSession
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	p := trove.CreateSessionParams{Stores: make([]trove.AttachStoreParams, 0, len(body.Resources))}
	for i, res := range body.Resources {
		if res.Type == nil || *res.Type != "memory_store" {
			return trove.Errorf(trove.EINVALID, "resources[%d].type must be \"memory_store\"", i)
		}
		if res.MemoryStoreID == nil || *res.MemoryStoreID == "" {
			return trove.Errorf(trove.EINVALID, "resources[%d].memory_store_id is required", i)
		}
		a := trove.AttachStoreParams{StoreID: *res.MemoryStoreID}
		if res.Access != nil {
			switch trove.Access(*res.Access) {
			case trove.AccessReadWrite, trove.AccessReadOnly:
				a.Access = trove.Access(*res.Access)
			default:
				return trove.Errorf(trove.EINVALID, "resources[%d].access must be \"read_write\" or \"read_only\", got %q", i, *res.Access)
			}
		}
		if res.Instructions != nil {
			a.Instructions = *res.Instructions
		}
		p.Stores = append(p.Stores, a)
	}
	sess, token, err := s.sess.CreateSession(r.Context(), p)
	if err != nil {
		return err
	}
	return s.ok(w, sessionToWire(sess, token))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.sess.GetSession(r.Context(), r.PathValue("session_id"))
	if err != nil {
		return err
	}
	return s.ok(w, sessionToWire(sess, ""))
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	page, err := s.sess.ListSessions(r.Context(), trove.ListSessionsParams{
		StoreID: q.Get("memory_store_id"), Limit: limit, Cursor: q.Get("page"),
	})
	if err != nil {
		return err
	}
	out := wirePage[wireSession]{Data: make([]wireSession, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = sessionToWire(&page.Data[i], "")
	}
	return s.ok(w, &out)
}

func (s *Server) endSession(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.sess.EndSession(r.Context(), r.PathValue("session_id"))
	if err != nil {
		return err
	}
	return s.ok(w, sessionToWire(sess, ""))
}

// queryView returns the view query parameter ("" when absent), parsing the
// query only when there is one: a get's hot path has none.
func queryView(w http.ResponseWriter, r *http.Request) trove.View {
	if r.URL.RawQuery == "" {
		return ""
	}
	return trove.View(queryOf(w, r).Get("view"))
}

// nullableString reads a member decoded raw (jsontext.Value) that may be
// a string or null: set is false when it was absent; null reads as "".
// Any other kind is EINVALID naming the member.
func nullableString(name string, v jsontext.Value) (s string, set bool, err error) {
	switch v.Kind() {
	case 0:
		if len(v) == 0 {
			return "", false, nil
		}
	case 'n':
		return "", true, nil
	case '"':
		if err := json.Unmarshal(v, &s, decodeOptions); err != nil {
			return "", false, jsonError(err)
		}
		return s, true, nil
	}
	return "", false, trove.Errorf(trove.EINVALID, "%s must be a string or null, not %s", name, kindName(v.Kind()))
}
