package core

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// The webhook outbox's producer side. Every write transaction core runs
// (Service.write) sees the database through an emitTx, which turns the row
// changes that are webhook events into deliveries in the same transaction:
// the event is durable exactly when the change is, and a rolled-back
// change (a failed precondition, a dry run, a lost race) queues nothing.
// The events are derived from the rows themselves, whichever service
// method makes them:
//
//	StoreInsert                       memory_store.created
//	StoreUpdate archiving a store     memory_store.archived
//	StoreDelete                       memory_store.deleted
//	VersionInsert, MemoryInsertBatch  trove.memory.created/updated/deleted (one per version)
//	SessionInsert                     session.created
//	SessionUpdate changing status     session.status_run_started/idled/rescheduled/terminated
//	SessionUpdate archiving           session.archived
//	SessionDelete                     session.deleted
//	AgentInsert / AgentUpdate         agent.created / agent.updated or agent.archived
//	EnvironmentInsert / …Update       environment.created / environment.updated or …archived
//	EnvironmentDelete                 environment.deleted
//
// (session.updated is emitted by UpdateSession itself: a title or
// metadata change is not visible in the row alone.) What a row was before
// its update is what this transaction read of it (the Lock or Get core
// always takes before an update).

// webhookJobKind is the jobs-table kind of an endpoint's delivery job; its
// key is the endpoint's ID.
const webhookJobKind = "webhook"

// emitTx is a storage.Tx that queues webhook deliveries for the changes
// made through it. One per attempt of a Write's function.
type emitTx struct {
	storage.Tx
	s     *Service
	start time.Time // before the transaction began (noHookCache's stamp)

	hooks map[string][]trove.Webhook // workspace → its enabled endpoints (read once)
	woken map[string]bool            // endpoints whose job this transaction woke
	sent  bool                       // a delivery was queued

	stores   map[string]rowSeen
	sessions map[string]rowSeen
	agents   map[string]rowSeen
	envs     map[string]rowSeen
}

// rowSeen is what the transaction read of a row before changing it.
type rowSeen struct {
	ws       string
	archived bool
	status   trove.SessionStatus
}

func newEmitTx(s *Service, tx storage.Tx, start time.Time) *emitTx {
	return &emitTx{Tx: tx, s: s, start: start}
}

func seen(m *map[string]rowSeen, id string, r rowSeen) {
	if *m == nil {
		*m = map[string]rowSeen{}
	}
	(*m)[id] = r
}

// workspaceOf returns the workspace of a row this transaction read, else
// the caller's.
func workspaceOf(ctx context.Context, m map[string]rowSeen, id string) string {
	if r, ok := m[id]; ok && r.ws != "" {
		return r.ws
	}
	if p := trove.PrincipalFrom(ctx); p != nil {
		return p.WorkspaceID
	}
	return ""
}

// eventData is the data member of an event: the SDK's fields, plus
// Trove's for trove.memory.* (omitted elsewhere).
type eventData struct {
	ID              string  `json:"id"`
	OrganizationID  string  `json:"organization_id"`
	Type            string  `json:"type"`
	WorkspaceID     string  `json:"workspace_id"`
	MemoryStoreID   string  `json:"memory_store_id,omitempty"`
	MemoryVersionID string  `json:"memory_version_id,omitempty"`
	Path            *string `json:"path,omitempty"`
	Seq             int64   `json:"seq,omitempty"`
}

// webhookEvent is a delivery's body, the SDK's UnwrapWebhookEvent.
type webhookEvent struct {
	ID        string    `json:"id"`
	CreatedAt string    `json:"created_at"`
	Data      eventData `json:"data"`
	Type      string    `json:"type"` // always "event"
}

// emit queues event typ about resource id of workspace ws for every
// enabled endpoint of ws that subscribes to it. The endpoints are read
// once per transaction, unless this node read less than NoEndpointCache
// ago that ws has none (noHookCache).
func (t *emitTx) emit(ctx context.Context, ws, typ, id string, extra func(*eventData)) error {
	if ws == "" {
		return nil
	}
	hooks, ok := t.hooks[ws]
	if !ok && t.s.noHooks.trusted(ws) {
		// No endpoint in ws, read less than NoEndpointCache ago: none for
		// the whole transaction.
		if t.hooks == nil {
			t.hooks = map[string][]trove.Webhook{}
		}
		t.hooks[ws] = nil
		return nil
	}
	if !ok {
		all, err := t.Tx.WebhookList(ctx, ws)
		if err != nil {
			return err
		}
		if len(all) == 0 {
			t.s.noHooks.remember(ws, t.start)
		}
		hooks = nil
		for _, h := range all {
			if h.State == trove.WebhookEnabled {
				hooks = append(hooks, h)
			}
		}
		if t.hooks == nil {
			t.hooks = map[string][]trove.Webhook{}
		}
		t.hooks[ws] = hooks
	}
	var payload []byte
	var eventID string
	var now time.Time
	for _, h := range hooks {
		if !slices.Contains(h.EnabledEvents, typ) {
			continue
		}
		if payload == nil {
			now = t.s.now()
			eventID = trove.NewID(trove.PrefixWebhookEvent, now)
			ev := webhookEvent{ID: eventID, CreatedAt: now.Format(time.RFC3339Nano), Type: "event",
				Data: eventData{ID: id, OrganizationID: trove.WebhookOrganizationID, Type: typ, WorkspaceID: ws}}
			if extra != nil {
				extra(&ev.Data)
			}
			var err error
			if payload, err = json.Marshal(&ev); err != nil {
				return err
			}
		}
		// The job's row first: in PostgreSQL its lock orders this
		// endpoint's writers, so deliveries take their seqs in commit
		// order.
		if !t.woken[h.ID] {
			if err := t.Tx.JobWake(ctx, webhookJobKind, h.ID, now); err != nil {
				return err
			}
			if t.woken == nil {
				t.woken = map[string]bool{}
			}
			t.woken[h.ID] = true
		}
		if err := t.Tx.DeliveryInsert(ctx, &trove.WebhookDelivery{WebhookID: h.ID, EventID: eventID, EventType: typ,
			Payload: payload, CreatedAt: now, Status: trove.DeliveryPending, NextAttemptAt: now}); err != nil {
			return err
		}
		t.sent = true
	}
	return nil
}

// ---- stores and memories ----

func (t *emitTx) StoreLock(ctx context.Context, ws, id string) (*trove.Store, error) {
	st, err := t.Tx.StoreLock(ctx, ws, id)
	if err == nil {
		seen(&t.stores, id, rowSeen{ws: st.WorkspaceID, archived: st.ArchivedAt != nil})
	}
	return st, err
}

func (t *emitTx) StoreGet(ctx context.Context, ws, id string) (*trove.Store, error) {
	st, err := t.Tx.StoreGet(ctx, ws, id)
	if err == nil {
		seen(&t.stores, id, rowSeen{ws: st.WorkspaceID, archived: st.ArchivedAt != nil})
	}
	return st, err
}

func (t *emitTx) StoreInsert(ctx context.Context, st *trove.Store) error {
	if err := t.Tx.StoreInsert(ctx, st); err != nil {
		return err
	}
	seen(&t.stores, st.ID, rowSeen{ws: st.WorkspaceID, archived: st.ArchivedAt != nil})
	return t.emit(ctx, st.WorkspaceID, trove.HookMemoryStoreCreated, st.ID, nil)
}

func (t *emitTx) StoreUpdate(ctx context.Context, st *trove.Store) error {
	if err := t.Tx.StoreUpdate(ctx, st); err != nil {
		return err
	}
	before, ok := t.stores[st.ID]
	seen(&t.stores, st.ID, rowSeen{ws: st.WorkspaceID, archived: st.ArchivedAt != nil})
	if ok && !before.archived && st.ArchivedAt != nil {
		return t.emit(ctx, st.WorkspaceID, trove.HookMemoryStoreArchived, st.ID, nil)
	}
	return nil
}

func (t *emitTx) StoreDelete(ctx context.Context, id string) error {
	if err := t.Tx.StoreDelete(ctx, id); err != nil {
		return err
	}
	return t.emit(ctx, workspaceOf(ctx, t.stores, id), trove.HookMemoryStoreDeleted, id, nil)
}

// memoryEventTypes maps a version's operation to its event.
var memoryEventTypes = map[trove.Operation]string{
	trove.OpCreated:  trove.HookMemoryCreated,
	trove.OpModified: trove.HookMemoryUpdated,
	trove.OpDeleted:  trove.HookMemoryDeleted,
}

func (t *emitTx) version(ctx context.Context, v *trove.MemoryVersion) error {
	typ, ok := memoryEventTypes[v.Operation]
	if !ok {
		return nil
	}
	return t.emit(ctx, workspaceOf(ctx, t.stores, v.StoreID), typ, v.MemoryID, func(d *eventData) {
		d.MemoryStoreID, d.MemoryVersionID, d.Path, d.Seq = v.StoreID, v.ID, v.Path, v.Seq
	})
}

func (t *emitTx) VersionInsert(ctx context.Context, v *trove.MemoryVersion) error {
	if err := t.Tx.VersionInsert(ctx, v); err != nil {
		return err
	}
	return t.version(ctx, v)
}

func (t *emitTx) MemoryInsertBatch(ctx context.Context, ms []*trove.Memory, vs []*trove.MemoryVersion) error {
	if err := t.Tx.MemoryInsertBatch(ctx, ms, vs); err != nil {
		return err
	}
	for _, v := range vs {
		if err := t.version(ctx, v); err != nil {
			return err
		}
	}
	return nil
}

// ---- sessions ----

func (t *emitTx) sawSession(se *trove.Session) {
	seen(&t.sessions, se.ID, rowSeen{ws: se.WorkspaceID, archived: se.ArchivedAt != nil, status: se.Status})
}

func (t *emitTx) SessionGet(ctx context.Context, ws, id string) (*trove.Session, error) {
	se, err := t.Tx.SessionGet(ctx, ws, id)
	if err == nil {
		t.sawSession(se)
	}
	return se, err
}

func (t *emitTx) SessionLock(ctx context.Context, ws, id string) (*trove.Session, error) {
	se, err := t.Tx.SessionLock(ctx, ws, id)
	if err == nil {
		t.sawSession(se)
	}
	return se, err
}

func (t *emitTx) SessionInsert(ctx context.Context, se *trove.Session, tokenHash []byte) error {
	if err := t.Tx.SessionInsert(ctx, se, tokenHash); err != nil {
		return err
	}
	t.sawSession(se)
	return t.emit(ctx, se.WorkspaceID, trove.HookSessionCreated, se.ID, nil)
}

// sessionStatusEvents maps a session status to the event of entering it.
var sessionStatusEvents = map[trove.SessionStatus]string{
	trove.SessionRunning:      trove.HookSessionStatusRunStarted,
	trove.SessionIdle:         trove.HookSessionStatusIdled,
	trove.SessionRescheduling: trove.HookSessionStatusRescheduled,
	trove.SessionTerminated:   trove.HookSessionStatusTerminated,
}

func (t *emitTx) SessionUpdate(ctx context.Context, se *trove.Session) error {
	if err := t.Tx.SessionUpdate(ctx, se); err != nil {
		return err
	}
	before, ok := t.sessions[se.ID]
	t.sawSession(se)
	if !ok {
		return nil
	}
	if typ := sessionStatusEvents[se.Status]; typ != "" && before.status != se.Status {
		if err := t.emit(ctx, se.WorkspaceID, typ, se.ID, nil); err != nil {
			return err
		}
	}
	if !before.archived && se.ArchivedAt != nil {
		return t.emit(ctx, se.WorkspaceID, trove.HookSessionArchived, se.ID, nil)
	}
	return nil
}

func (t *emitTx) SessionDelete(ctx context.Context, id string) error {
	if err := t.Tx.SessionDelete(ctx, id); err != nil {
		return err
	}
	return t.emit(ctx, workspaceOf(ctx, t.sessions, id), trove.HookSessionDeleted, id, nil)
}

// ---- agents and environments ----

func (t *emitTx) AgentLock(ctx context.Context, ws, id string) (*trove.Agent, error) {
	a, err := t.Tx.AgentLock(ctx, ws, id)
	if err == nil {
		seen(&t.agents, id, rowSeen{ws: a.WorkspaceID, archived: a.ArchivedAt != nil})
	}
	return a, err
}

func (t *emitTx) AgentInsert(ctx context.Context, a *trove.Agent) error {
	if err := t.Tx.AgentInsert(ctx, a); err != nil {
		return err
	}
	seen(&t.agents, a.ID, rowSeen{ws: a.WorkspaceID, archived: a.ArchivedAt != nil})
	return t.emit(ctx, a.WorkspaceID, trove.HookAgentCreated, a.ID, nil)
}

func (t *emitTx) AgentUpdate(ctx context.Context, a *trove.Agent, newVersion bool) error {
	if err := t.Tx.AgentUpdate(ctx, a, newVersion); err != nil {
		return err
	}
	before := t.agents[a.ID]
	seen(&t.agents, a.ID, rowSeen{ws: a.WorkspaceID, archived: a.ArchivedAt != nil})
	typ := trove.HookAgentUpdated
	if !before.archived && a.ArchivedAt != nil {
		typ = trove.HookAgentArchived
	}
	return t.emit(ctx, a.WorkspaceID, typ, a.ID, nil)
}

func (t *emitTx) EnvironmentGet(ctx context.Context, ws, id string) (*trove.Environment, error) {
	e, err := t.Tx.EnvironmentGet(ctx, ws, id)
	if err == nil {
		seen(&t.envs, id, rowSeen{ws: e.WorkspaceID, archived: e.ArchivedAt != nil})
	}
	return e, err
}

func (t *emitTx) EnvironmentInsert(ctx context.Context, e *trove.Environment) error {
	if err := t.Tx.EnvironmentInsert(ctx, e); err != nil {
		return err
	}
	seen(&t.envs, e.ID, rowSeen{ws: e.WorkspaceID, archived: e.ArchivedAt != nil})
	return t.emit(ctx, e.WorkspaceID, trove.HookEnvironmentCreated, e.ID, nil)
}

func (t *emitTx) EnvironmentUpdate(ctx context.Context, e *trove.Environment) error {
	if err := t.Tx.EnvironmentUpdate(ctx, e); err != nil {
		return err
	}
	before := t.envs[e.ID]
	seen(&t.envs, e.ID, rowSeen{ws: e.WorkspaceID, archived: e.ArchivedAt != nil})
	typ := trove.HookEnvironmentUpdated
	if !before.archived && e.ArchivedAt != nil {
		typ = trove.HookEnvironmentArchived
	}
	return t.emit(ctx, e.WorkspaceID, typ, e.ID, nil)
}

func (t *emitTx) EnvironmentDelete(ctx context.Context, id string) error {
	if err := t.Tx.EnvironmentDelete(ctx, id); err != nil {
		return err
	}
	return t.emit(ctx, workspaceOf(ctx, t.envs, id), trove.HookEnvironmentDeleted, id, nil)
}

// noHookCache remembers the workspaces this node found without any
// webhook endpoint, so that their writes do not read the endpoints again
// for ttl (WebhookOptions.NoEndpointCache): most workspaces have none, and
// the read is a round trip per write on PostgreSQL.
//
// Why it is right across nodes and processes: a workspace is remembered
// with the time its write began (before its transaction, so before the
// snapshot that saw no endpoint), and trusted until ttl after that; an
// endpoint is created by a transaction that committed after that snapshot
// (else the read would have seen it), and CreateWebhook returns only ttl
// after its commit. So once CreateWebhook returns, every node's memory of
// "none" for the workspace has expired, and every change begun after it
// reads the endpoint, as without the cache. (Durations of the same length
// on two machines' monotonic clocks; their drift is parts per million.)
type noHookCache struct {
	ttl   time.Duration // <= 0: no cache
	mu    sync.Mutex
	until map[string]time.Time // workspace → end of trust (monotonic)
}

// maxNoHookEntries bounds the cache; past it, expired entries go, and all
// of them if that is not enough.
const maxNoHookEntries = 4096

func (c *noHookCache) trusted(ws string) bool {
	if c.ttl <= 0 {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.until[ws]
	return ok && time.Now().Before(u)
}

// remember records that a transaction begun at start saw no endpoint in
// ws.
func (c *noHookCache) remember(ws string, start time.Time) {
	if c.ttl <= 0 {
		return
	}
	u := start.Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.until == nil {
		c.until = map[string]time.Time{}
	}
	if len(c.until) >= maxNoHookEntries {
		now := time.Now()
		for k, v := range c.until {
			if !now.Before(v) {
				delete(c.until, k)
			}
		}
		if len(c.until) >= maxNoHookEntries {
			clear(c.until)
		}
	}
	if u.After(c.until[ws]) {
		c.until[ws] = u
	}
}

// forget drops ws (an endpoint was created in it here).
func (c *noHookCache) forget(ws string) {
	c.mu.Lock()
	delete(c.until, ws)
	c.mu.Unlock()
}
