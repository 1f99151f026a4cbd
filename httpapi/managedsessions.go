package httpapi

import (
	stdjson "encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// The Managed Agents sessions API (/v1/sessions…), over the same sessions
// and transcripts as /trove/v1/sessions: one table, one ID space.
//
//	POST   /v1/sessions                         create (agent, environment_id, resources, title, metadata, initial_events, budget)
//	GET    /v1/sessions                         list (limit, page, order, agent_id, agent_version, memory_store_id, statuses[], created_at[…], include_archived)
//	GET    /v1/sessions/{id}                    get
//	POST   /v1/sessions/{id}                    update (title, metadata)
//	DELETE /v1/sessions/{id}                    delete
//	POST   /v1/sessions/{id}/archive            archive (terminates)
//	GET    /v1/sessions/{id}/resources[/{rid}]  the memory_store resources (rid: the store's ID)
//	POST   /v1/sessions/{id}/events             send (user.message, user.interrupt, user.tool_confirmation, user.custom_tool_result, user.tool_result)
//	GET    /v1/sessions/{id}/events             list (limit, page, order, types[], created_at[…])
//	GET    /v1/sessions/{id}/events/stream      server-sent events ("id: <seq>", "event: <type>", "data: <event>"), from now, or after Last-Event-ID / ?after_seq=

// addSessionRoutes adds the /v1/sessions routes when the session and event
// services offer what they need.
func (s *Server) addSessionRoutes(add func(method, path string, kind routeKind, h handlerFunc)) {
	ms, ok := s.sess.(trove.ManagedSessionService)
	if !ok || s.events == nil {
		return
	}
	s.msess = ms
	s.waiter, _ = s.events.(trove.EventWaiter)
	const one = "/v1/sessions/{session_id}"
	add("POST", "/v1/sessions", kindManaged, s.createManagedSession)
	add("GET", "/v1/sessions", kindManaged, s.listManagedSessions)
	add("GET", one, kindManaged, s.getManagedSession)
	add("POST", one, kindManaged, s.updateManagedSession)
	add("DELETE", one, kindManaged, s.deleteManagedSession)
	add("POST", one+"/archive", kindManaged, s.archiveManagedSession)
	add("GET", one+"/resources", kindManaged, s.listSessionResources)
	add("POST", one+"/resources", kindManaged, s.addSessionResource)
	add("GET", one+"/resources/{resource_id}", kindManaged, s.getSessionResource)
	add("POST", one+"/resources/{resource_id}", kindManaged, s.changeSessionResource)
	add("DELETE", one+"/resources/{resource_id}", kindManaged, s.changeSessionResource)
	add("POST", one+"/events", kindManaged, s.sendEvents)
	add("GET", one+"/events", kindManaged, s.listManagedEvents)
	if s.waiter != nil {
		add("GET", one+"/events/stream", kindManaged, s.streamEvents)
	}
}

// Wire shapes (BetaManagedAgentsSession and its parts).

type wireMSessionResource struct {
	Type          string  `json:"type"`
	MemoryStoreID string  `json:"memory_store_id"`
	Access        string  `json:"access"`
	Name          string  `json:"name"`
	Description   string  `json:"description"`
	Instructions  *string `json:"instructions"`
	MountPath     string  `json:"mount_path"`
}

type wireCacheCreation struct {
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
}

type wireSessionUsage struct {
	InputTokens          int64             `json:"input_tokens"`
	OutputTokens         int64             `json:"output_tokens"`
	CacheReadInputTokens int64             `json:"cache_read_input_tokens"`
	CacheCreation        wireCacheCreation `json:"cache_creation"`
	ActiveSeconds        float64           `json:"active_seconds"`
}

type wireSessionStats struct {
	DurationSeconds float64 `json:"duration_seconds"`
	ActiveSeconds   float64 `json:"active_seconds"`
}

type wireMoney struct {
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
}

type wireBudget struct {
	Type        string    `json:"type"`
	MaxListCost wireMoney `json:"max_list_cost"`
}

type wireMSession struct {
	Type               string                 `json:"type"`
	ID                 string                 `json:"id"`
	Status             string                 `json:"status"`
	CreatedAt          string                 `json:"created_at"`
	UpdatedAt          string                 `json:"updated_at"`
	EnvironmentID      string                 `json:"environment_id"`
	Title              *string                `json:"title"`
	Metadata           map[string]string      `json:"metadata"`
	Agent              *wireAgent             `json:"agent"`
	Resources          []wireMSessionResource `json:"resources"`
	VaultIDs           []string               `json:"vault_ids"`
	OutcomeEvaluations []struct{}             `json:"outcome_evaluations"`
	Usage              wireSessionUsage       `json:"usage"`
	Stats              wireSessionStats       `json:"stats"`
	ArchivedAt         *string                `json:"archived_at"`
	Budget             *wireBudget            `json:"budget"`
}

func storeResourceToWire(st *trove.SessionStore) wireMSessionResource {
	return wireMSessionResource{Type: "memory_store", MemoryStoreID: st.StoreID, Access: string(st.Access),
		Name: st.Name, Description: st.Description, Instructions: nilIfEmpty(st.Instructions), MountPath: st.MountPath}
}

// managedSessionToWire renders any session (an agent-less one has a null
// agent and an empty environment_id) as of now.
func managedSessionToWire(se *trove.Session, now time.Time) wireMSession {
	w := wireMSession{
		Type: "session", ID: se.ID, Status: string(se.Status), CreatedAt: formatTime(se.CreatedAt),
		UpdatedAt: formatTime(se.UpdatedAt), Title: nilIfEmpty(se.Title), Metadata: se.Metadata,
		Resources: make([]wireMSessionResource, len(se.Stores)), VaultIDs: []string{}, OutcomeEvaluations: []struct{}{},
		ArchivedAt: formatTimePtr(se.ArchivedAt),
	}
	if w.Status == "" {
		w.Status = string(trove.SessionIdle)
	}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	if se.UpdatedAt.IsZero() {
		w.UpdatedAt = w.CreatedAt
	}
	for i := range se.Stores {
		w.Resources[i] = storeResourceToWire(&se.Stores[i])
	}
	end := now
	if se.EndedAt != nil {
		end = *se.EndedAt
	}
	w.Stats.DurationSeconds = max(0, end.Sub(se.CreatedAt).Seconds())
	if m := se.Managed; m != nil {
		w.EnvironmentID = m.EnvironmentID
		if m.Agent != nil {
			a := agentToWire(m.Agent)
			w.Agent = &a
		}
		active := m.ActiveSeconds
		if m.RunningSince != nil {
			active += max(0, now.Sub(*m.RunningSince).Seconds())
		}
		w.Usage = wireSessionUsage{InputTokens: m.Usage.InputTokens, OutputTokens: m.Usage.OutputTokens,
			CacheReadInputTokens: m.Usage.CacheReadInputTokens,
			CacheCreation:        wireCacheCreation{Ephemeral5m: m.Usage.CacheCreationInputTokens}, ActiveSeconds: active}
		w.Stats.ActiveSeconds = active
		if b := m.Budget; b != nil {
			w.Budget = &wireBudget{Type: "limit", MaxListCost: wireMoney{Currency: b.Currency, Amount: b.Amount}}
		}
	}
	return w
}

// Request bodies: members Trove cannot honour are decoded raw and refused
// by name unless empty or null.

type wireCreateMSession struct {
	Agent         jsontext.Value    `json:"agent"`
	EnvironmentID *string           `json:"environment_id"`
	Title         jsontext.Value    `json:"title"`
	Metadata      map[string]string `json:"metadata"`
	Resources     []jsontext.Value  `json:"resources"`
	VaultIDs      jsontext.Value    `json:"vault_ids"`
	InitialEvents []jsontext.Value  `json:"initial_events"`
	Budget        jsontext.Value    `json:"budget"`
}

type wireAgentRef struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Version *int64 `json:"version"`
}

type wireMemoryStoreParam struct {
	Type          string  `json:"type"`
	MemoryStoreID *string `json:"memory_store_id"`
	Access        *string `json:"access"`
	Instructions  *string `json:"instructions"`
}

type wireBudgetParam struct {
	Type        string `json:"type"`
	MaxListCost struct {
		Currency string `json:"currency"`
		Amount   string `json:"amount"`
	} `json:"max_list_cost"`
}

type wireUpdateMSession struct {
	Title    jsontext.Value     `json:"title"`
	Metadata map[string]*string `json:"metadata"`
	VaultIDs jsontext.Value     `json:"vault_ids"`
	Agent    jsontext.Value     `json:"agent"`
	Budget   jsontext.Value     `json:"budget"`
}

// unionType reads the "type" member of a JSON object, "" when absent.
func unionType(v jsontext.Value) string {
	var head struct {
		Type string `json:"type"`
	}
	_ = stdjson.Unmarshal(v, &head)
	return head.Type
}

// decodeStrict decodes v into dst with the request bodies' strict rules;
// field names the member for the error message.
func decodeStrict(field string, v jsontext.Value, dst any) error {
	if err := json.Unmarshal(v, dst, decodeOptions); err != nil {
		return prefixErr(field, jsonError(err))
	}
	return nil
}

func decodeAgentRef(v jsontext.Value) (*trove.AgentRef, error) {
	switch v.Kind() {
	case '"':
		var id string
		if err := json.Unmarshal(v, &id); err != nil || id == "" {
			return nil, trove.Errorf(trove.EINVALID, "agent must be an agent ID or an object")
		}
		return &trove.AgentRef{ID: id}, nil
	case '{':
		switch t := unionType(v); t {
		case "agent":
			var ref wireAgentRef
			if err := decodeStrict("agent", v, &ref); err != nil {
				return nil, err
			}
			if ref.ID == "" {
				return nil, trove.Errorf(trove.EINVALID, "agent.id is required")
			}
			out := &trove.AgentRef{ID: ref.ID}
			if ref.Version != nil {
				if *ref.Version < 1 {
					return nil, trove.Errorf(trove.EINVALID, "agent.version must be >= 1, got %d", *ref.Version)
				}
				out.Version = *ref.Version
			}
			return out, nil
		case "agent_with_overrides":
			return nil, trove.Errorf(trove.EINVALID, "agent.type \"agent_with_overrides\" is not supported: create a new agent version with the overrides (POST /v1/agents/{id}) and pass it with {\"type\": \"agent\", \"id\", \"version\"}")
		default:
			return nil, trove.Errorf(trove.EINVALID, "agent.type must be \"agent\", got %q", t)
		}
	case 0:
		return nil, trove.Errorf(trove.EINVALID, "agent is required")
	}
	return nil, trove.Errorf(trove.EINVALID, "agent must be an agent ID or an object")
}

func decodeBudget(v jsontext.Value) (*trove.SessionBudget, error) {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil, nil
	}
	var b wireBudgetParam
	if err := decodeStrict("budget", v, &b); err != nil {
		return nil, err
	}
	if b.Type != "limit" {
		return nil, trove.Errorf(trove.EINVALID, "budget.type must be \"limit\", got %q", b.Type)
	}
	return &trove.SessionBudget{Currency: b.MaxListCost.Currency, Amount: b.MaxListCost.Amount}, nil
}

func (s *Server) createManagedSession(w http.ResponseWriter, r *http.Request) error {
	var body wireCreateMSession
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	ref, err := decodeAgentRef(body.Agent)
	if err != nil {
		return err
	}
	if body.EnvironmentID == nil || *body.EnvironmentID == "" {
		return trove.Errorf(trove.EINVALID, "environment_id is required")
	}
	if !emptyJSON(body.VaultIDs) {
		return refuseField("vault_ids", "vaults")
	}
	title, _, err := nullableString("title", body.Title)
	if err != nil {
		return err
	}
	p := trove.CreateSessionParams{Agent: ref, EnvironmentID: *body.EnvironmentID, Title: title, Metadata: body.Metadata}
	if p.Budget, err = decodeBudget(body.Budget); err != nil {
		return err
	}
	for i, raw := range body.Resources {
		field := "resources[" + strconv.Itoa(i) + "]"
		if raw.Kind() != '{' {
			return trove.Errorf(trove.EINVALID, "%s must be an object", field)
		}
		switch t := unionType(raw); t {
		case "memory_store":
		case "file", "github_repository":
			return trove.Errorf(trove.EINVALID, "%s.type %q is not accepted: a self-hosted environment accepts only memory_store resources", field, t)
		default:
			return trove.Errorf(trove.EINVALID, "%s.type must be \"memory_store\", got %q", field, t)
		}
		var res wireMemoryStoreParam
		if err := decodeStrict(field, raw, &res); err != nil {
			return err
		}
		if res.MemoryStoreID == nil || *res.MemoryStoreID == "" {
			return trove.Errorf(trove.EINVALID, "%s.memory_store_id is required", field)
		}
		a := trove.AttachStoreParams{StoreID: *res.MemoryStoreID}
		if res.Access != nil {
			switch trove.Access(*res.Access) {
			case trove.AccessReadWrite, trove.AccessReadOnly:
				a.Access = trove.Access(*res.Access)
			default:
				return trove.Errorf(trove.EINVALID, "%s.access must be \"read_write\" or \"read_only\", got %q", field, *res.Access)
			}
		}
		if res.Instructions != nil {
			a.Instructions = *res.Instructions
		}
		p.Stores = append(p.Stores, a)
	}
	for i, raw := range body.InitialEvents {
		ev, err := decodeSendEvent("initial_events["+strconv.Itoa(i)+"]", raw)
		if err != nil {
			return err
		}
		p.InitialEvents = append(p.InitialEvents, ev)
	}
	se, _, err := s.sess.CreateSession(r.Context(), p)
	if err != nil {
		return err
	}
	return s.ok(w, managedSessionToWire(se, time.Now()))
}

func (s *Server) getManagedSession(w http.ResponseWriter, r *http.Request) error {
	se, err := s.sess.GetSession(r.Context(), r.PathValue("session_id"))
	if err != nil {
		return err
	}
	return s.ok(w, managedSessionToWire(se, time.Now()))
}

// checkQuery refuses query parameters outside allowed ("beta", which the
// SDK may send, is always allowed).
func checkQuery(q url.Values, allowed ...string) error {
	for k := range q {
		if k != "beta" && !slices.Contains(allowed, k) {
			return trove.Errorf(trove.EINVALID, "unknown query parameter %q; this endpoint takes %s", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// queryTime parses an RFC 3339 query parameter (nil when absent).
func queryTime(q url.Values, name string) (*time.Time, error) {
	v := q.Get(name)
	if v == "" {
		if _, ok := q[name]; ok {
			return nil, trove.Errorf(trove.EINVALID, "%s must be an RFC 3339 timestamp, got \"\"", name)
		}
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil, trove.Errorf(trove.EINVALID, "%s must be an RFC 3339 timestamp, got %q", name, v)
	}
	t = t.UTC()
	return &t, nil
}

// eventListQuery reads a transcript listing's query (limit, page, order,
// types[], created_at[…]) and, with more, the other parameters it allows
// (Trove's own listing adds after_seq).
func eventListQuery(q url.Values, more ...string) (trove.ListEventsParams, error) {
	allowed := append([]string{"limit", "page", "order", "types[]", "types", "created_at[gte]", "created_at[gt]", "created_at[lte]", "created_at[lt]"}, more...)
	if err := checkQuery(q, allowed...); err != nil {
		return trove.ListEventsParams{}, err
	}
	limit, err := queryLimit(q)
	if err != nil {
		return trove.ListEventsParams{}, err
	}
	p := trove.ListEventsParams{Limit: limit, Cursor: q.Get("page"), Order: q.Get("order")}
	for _, v := range append(q["types[]"], q["types"]...) {
		for t := range strings.SplitSeq(v, ",") {
			p.Types = append(p.Types, t)
		}
	}
	if p.CreatedAt, p.CreatedAfter, p.CreatedBefore, err = createdAtBounds(q); err != nil {
		return trove.ListEventsParams{}, err
	}
	return p, nil
}

// createdAtBounds reads created_at[gte|gt|lte|lt].
func createdAtBounds(q url.Values) (tr trove.TimeRange, after, before *time.Time, err error) {
	if tr.GTE, err = queryTime(q, "created_at[gte]"); err != nil {
		return
	}
	if tr.LTE, err = queryTime(q, "created_at[lte]"); err != nil {
		return
	}
	if after, err = queryTime(q, "created_at[gt]"); err != nil {
		return
	}
	before, err = queryTime(q, "created_at[lt]")
	return
}

func (s *Server) listManagedSessions(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	if err := checkQuery(q, "limit", "page", "order", "include_archived", "agent_id", "agent_version", "memory_store_id",
		"deployment_id", "statuses[]", "statuses", "created_at[gte]", "created_at[gt]", "created_at[lte]", "created_at[lt]"); err != nil {
		return err
	}
	if q.Get("deployment_id") != "" {
		return refuseField("deployment_id", "deployments")
	}
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	inclArchived, err := queryBool(q, "include_archived")
	if err != nil {
		return err
	}
	p := trove.ListSessionsParams{Limit: limit, Cursor: q.Get("page"), Order: q.Get("order"), IncludeArchived: inclArchived,
		AgentID: q.Get("agent_id"), StoreID: q.Get("memory_store_id")}
	if v := q.Get("agent_version"); v != "" {
		if p.AgentVersion, err = strconv.ParseInt(v, 10, 64); err != nil || p.AgentVersion < 1 {
			return trove.Errorf(trove.EINVALID, "agent_version must be an integer >= 1, got %q", v)
		}
	}
	for _, v := range append(q["statuses[]"], q["statuses"]...) {
		for st := range strings.SplitSeq(v, ",") {
			p.Statuses = append(p.Statuses, trove.SessionStatus(st))
		}
	}
	if p.CreatedAt, p.CreatedAfter, p.CreatedBefore, err = createdAtBounds(q); err != nil {
		return err
	}
	page, err := s.sess.ListSessions(r.Context(), p)
	if err != nil {
		return err
	}
	now := time.Now()
	out := struct {
		Data     []wireMSession `json:"data"`
		NextPage *string        `json:"next_page"`
		PrevPage *string        `json:"prev_page"`
	}{Data: make([]wireMSession, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = managedSessionToWire(&page.Data[i], now)
	}
	return s.ok(w, &out)
}

func (s *Server) updateManagedSession(w http.ResponseWriter, r *http.Request) error {
	var body wireUpdateMSession
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	if !emptyJSON(body.VaultIDs) {
		return refuseField("vault_ids", "vaults")
	}
	if !emptyJSON(body.Agent) {
		return trove.Errorf(trove.EINVALID, "agent: a session's agent (its tools and MCP servers) cannot be changed; create a session with a new agent version")
	}
	if len(body.Budget) > 0 {
		return trove.Errorf(trove.EINVALID, "budget: a session's budget is set at creation and cannot be changed")
	}
	var p trove.UpdateSessionParams
	title, set, err := nullableString("title", body.Title)
	if err != nil {
		return err
	}
	if set {
		p.Title = &title
	}
	p.Metadata = body.Metadata
	se, err := s.msess.UpdateSession(r.Context(), r.PathValue("session_id"), p)
	if err != nil {
		return err
	}
	return s.ok(w, managedSessionToWire(se, time.Now()))
}

func (s *Server) archiveManagedSession(w http.ResponseWriter, r *http.Request) error {
	se, err := s.msess.ArchiveSession(r.Context(), r.PathValue("session_id"))
	if err != nil {
		return err
	}
	return s.ok(w, managedSessionToWire(se, time.Now()))
}

func (s *Server) deleteManagedSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("session_id")
	if err := s.msess.DeleteSession(r.Context(), id); err != nil {
		return err
	}
	return s.ok(w, map[string]string{"type": "session_deleted", "id": id})
}

// Resources: a session's memory stores, each named by its store ID (a
// memory_store resource has no ID of its own). They are attached at
// creation only.

func (s *Server) listSessionResources(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	if err := checkQuery(q, "limit", "page"); err != nil {
		return err
	}
	// The limit is validated like every list's; a session has at most
	// MaxStoresPerSession resources, so they are always one page.
	if _, err := queryLimit(q); err != nil {
		return err
	}
	se, err := s.sess.GetSession(r.Context(), r.PathValue("session_id"))
	if err != nil {
		return err
	}
	out := wirePage[wireMSessionResource]{Data: make([]wireMSessionResource, len(se.Stores))}
	for i := range se.Stores {
		out.Data[i] = storeResourceToWire(&se.Stores[i])
	}
	return s.ok(w, &out)
}

func (s *Server) getSessionResource(w http.ResponseWriter, r *http.Request) error {
	se, err := s.sess.GetSession(r.Context(), r.PathValue("session_id"))
	if err != nil {
		return err
	}
	rid := r.PathValue("resource_id")
	for i := range se.Stores {
		if se.Stores[i].StoreID == rid {
			return s.ok(w, storeResourceToWire(&se.Stores[i]))
		}
	}
	return trove.Errorf(trove.ENOTFOUND, "session %s has no resource %s (a memory_store resource is named by its memory_store_id)", se.ID, rid)
}

// errResourcesFixed is the refusal of every change to a session's
// resources, as the memory stores documentation says.
func errResourcesFixed() error {
	return trove.Errorf(trove.EINVALID, "memory stores can only be attached when the session is created; adding, changing or removing a resource of an existing session is not supported")
}

func (s *Server) addSessionResource(w http.ResponseWriter, r *http.Request) error {
	// The session must exist and be the caller's; then the refusal.
	if _, err := s.sess.GetSession(r.Context(), r.PathValue("session_id")); err != nil {
		return err
	}
	return errResourcesFixed()
}

func (s *Server) changeSessionResource(w http.ResponseWriter, r *http.Request) error {
	if err := s.getSessionResource(discardWriter{}, r); err != nil {
		return err
	}
	return errResourcesFixed()
}

// discardWriter drops a response (getSessionResource run for its checks).
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

// Events.

type wireTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type wireUserMessageParam struct {
	Type    string           `json:"type"`
	Content []jsontext.Value `json:"content"`
}

type wireInterruptParam struct {
	Type            string  `json:"type"`
	SessionThreadID *string `json:"session_thread_id"`
}

type wireConfirmationParam struct {
	Type        string  `json:"type"`
	ToolUseID   string  `json:"tool_use_id"`
	Result      string  `json:"result"`
	DenyMessage *string `json:"deny_message"`
}

type wireToolResultParam struct {
	Type      string           `json:"type"`
	ToolUseID string           `json:"tool_use_id"`
	Content   []jsontext.Value `json:"content"`
	IsError   *bool            `json:"is_error"`
}

type wireCustomToolResultParam struct {
	Type            string           `json:"type"`
	CustomToolUseID string           `json:"custom_tool_use_id"`
	Content         []jsontext.Value `json:"content"`
	IsError         *bool            `json:"is_error"`
}

// contentBlockTypes are the block types a user message or a tool result
// may carry.
var contentBlockTypes = []string{"text", "image", "document", "search_result", "redacted"}

func checkBlocks(field string, blocks []jsontext.Value) error {
	for i, b := range blocks {
		f := field + "[" + strconv.Itoa(i) + "]"
		if b.Kind() != '{' {
			return trove.Errorf(trove.EINVALID, "%s must be a content block object", f)
		}
		t := unionType(b)
		if !slices.Contains(contentBlockTypes, t) {
			return trove.Errorf(trove.EINVALID, "%s.type must be one of %v, got %q", f, contentBlockTypes, t)
		}
		if t == "text" {
			var tb wireTextBlock
			if err := decodeStrict(f, b, &tb); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeSendEvent checks one event of the SDK's send union strictly (its
// members exactly, case-sensitively) and returns it for core.
func decodeSendEvent(field string, raw jsontext.Value) (trove.NewSessionEvent, error) {
	if raw.Kind() != '{' {
		return trove.NewSessionEvent{}, trove.Errorf(trove.EINVALID, "%s must be a JSON object", field)
	}
	t := unionType(raw)
	var err error
	switch t {
	case trove.EventUserMessage:
		var e wireUserMessageParam
		if err = decodeStrict(field, raw, &e); err == nil {
			if len(e.Content) == 0 {
				err = trove.Errorf(trove.EINVALID, "%s.content must hold at least one content block", field)
			} else {
				err = checkBlocks(field+".content", e.Content)
			}
		}
	case trove.EventUserInterrupt:
		var e wireInterruptParam
		if err = decodeStrict(field, raw, &e); err == nil && e.SessionThreadID != nil && *e.SessionThreadID != "" {
			err = trove.Errorf(trove.EINVALID, "%s.session_thread_id: Trove sessions have one thread; leave it out", field)
		}
	case trove.EventUserToolConfirmation:
		var e wireConfirmationParam
		err = decodeStrict(field, raw, &e)
	case trove.EventUserToolResult:
		var e wireToolResultParam
		if err = decodeStrict(field, raw, &e); err == nil {
			err = checkBlocks(field+".content", e.Content)
		}
	case trove.EventUserCustomToolResult:
		var e wireCustomToolResultParam
		if err = decodeStrict(field, raw, &e); err == nil {
			err = checkBlocks(field+".content", e.Content)
		}
	case trove.EventUserDefineOutcome, trove.EventSystemMessage:
		err = trove.Errorf(trove.EINVALID, "%s.type %q is not supported: Trove's agent loop does not run outcomes or client system messages", field, t)
	case "":
		err = trove.Errorf(trove.EINVALID, "%s.type is required", field)
	default:
		err = trove.Errorf(trove.EINVALID, "%s.type %q cannot be sent; send one of %v", field, t, trove.SendEventTypes)
	}
	if err != nil {
		return trove.NewSessionEvent{}, err
	}
	return trove.NewSessionEvent{Type: t, Body: string(raw)}, nil
}

type wireSendEvents struct {
	Events []jsontext.Value `json:"events"`
}

func (s *Server) sendEvents(w http.ResponseWriter, r *http.Request) error {
	var body wireSendEvents
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if len(body.Events) == 0 {
		return trove.Errorf(trove.EINVALID, "events must hold at least one event")
	}
	evs := make([]trove.NewSessionEvent, len(body.Events))
	for i, raw := range body.Events {
		ev, err := decodeSendEvent("events["+strconv.Itoa(i)+"]", raw)
		if err != nil {
			return err
		}
		evs[i] = ev
	}
	id := r.PathValue("session_id")
	se, err := s.sess.GetSession(r.Context(), id)
	if err != nil {
		return err
	}
	if se.Managed == nil {
		return trove.Errorf(trove.EINVALID, "session %s has no agent to answer events; record an agent-less session's transcript with POST /trove/v1/sessions/%s/events", id, id)
	}
	out, err := s.events.AppendEvents(r.Context(), id, evs)
	if err != nil {
		return err
	}
	data := make([]map[string]stdjson.RawMessage, len(out))
	for i := range out {
		data[i] = eventToWire(&out[i])
	}
	return s.ok(w, map[string]any{"data": data})
}

func (s *Server) listManagedEvents(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	p, err := eventListQuery(q)
	if err != nil {
		return err
	}
	// The SDK's reconciling reader asks for 1,000 events a page: served as
	// pages of the largest size instead of refused.
	p.Limit = min(p.Limit, maxEventPage)
	page, err := s.events.ListEvents(r.Context(), r.PathValue("session_id"), p)
	if err != nil {
		return err
	}
	out := wirePage[map[string]stdjson.RawMessage]{Data: make([]map[string]stdjson.RawMessage, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = eventToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

// maxEventPage caps an event list's page (core's MaxPageSize default).
const maxEventPage = 100
