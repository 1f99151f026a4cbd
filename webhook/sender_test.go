package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
	"github.com/trovehq/trove/webhook"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// clock is the services' injected time.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// env is one database with a core over it (a "node"), and the means to
// open more nodes over the same database.
type env struct {
	t    *testing.T
	open func() storage.Driver
	clk  *clock
	svc  *core.Service
	ctx  context.Context // as the workspace's API key
}

const ws = "wrkspc_test"

var hookOpts = core.WebhookOptions{AllowHTTP: true, AllowPrivate: true, RetryBase: 10 * time.Second, RetryMax: 40 * time.Second,
	MaxAttempts: 6, Jitter: func() float64 { return 0 }}

func (e *env) node() *core.Service {
	return core.New(e.open(), core.Options{Now: e.clk.Now, Webhooks: hookOpts})
}

// drivers runs fn over SQLite and, when it is available, PostgreSQL.
func drivers(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := sqlitetest.Path(t)
		fn(t, newEnv(t, func() storage.Driver {
			db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgtest.SchemaURL(t)
		fn(t, newEnv(t, func() storage.Driver {
			db, err := postgres.Open(context.Background(), url, postgres.Options{AutoMigrate: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}))
	})
}

func newEnv(t *testing.T, open func() storage.Driver) *env {
	e := &env{t: t, open: open, clk: &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}}
	e.svc = e.node()
	e.ctx = trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: ws, Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_test"}})
	return e
}

// receiver is an endpoint that verifies every request with the official
// SDK's Unwrap and keeps the events by webhook-id (a receiver's dedupe).
type receiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	secret string
	down   bool          // answer 503
	hold   chan struct{} // when set, the next request waits on it (after arriving is signalled)
	held   chan string   // receives the webhook-id of a held request
	ids    []string      // first receipt of each event, in order
	events map[string]*anthropic.UnwrapWebhookEvent
	raw    map[string]string
	posts  int // requests answered 2xx, duplicates included
	bad    int // requests Unwrap refused
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t, events: map[string]*anthropic.UnwrapWebhookEvent{}, raw: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	hold, held, down, secret := r.hold, r.held, r.down, r.secret
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		held <- req.Header.Get("webhook-id")
		<-hold
	}
	if down {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	client := anthropic.NewClient(option.WithWebhookKey(secret), option.WithAPIKey("unused"))
	ev, err := client.Beta.Webhooks.Unwrap(body, req.Header)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.bad++
		r.t.Errorf("Unwrap refused a delivery: %v (id %s)", err, req.Header.Get("webhook-id"))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	if id != ev.ID {
		r.t.Errorf("webhook-id %s differs from the event's id %s", id, ev.ID)
	}
	if _, dup := r.events[id]; !dup {
		r.ids = append(r.ids, id)
		r.events[id] = ev
		r.raw[id] = string(body)
	}
	r.posts++
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) set(fn func(r *receiver)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r)
}

// types returns the data.type of the events received, in order of first
// receipt.
func (r *receiver) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range r.ids {
		out = append(out, r.events[id].Data.Type)
	}
	return out
}

// hook creates an endpoint at r for events.
func (e *env) hook(r *receiver, events ...string) *trove.Webhook {
	e.t.Helper()
	w, secret, err := e.svc.CreateWebhook(e.ctx, trove.CreateWebhookParams{URL: r.srv.URL + "/hooks?token=abc", EnabledEvents: events})
	if err != nil {
		e.t.Fatal(err)
	}
	r.set(func(r *receiver) { r.secret = secret })
	return w
}

func newSender(svc *core.Service, owner string) *webhook.Sender {
	return webhook.New(webhook.Config{Backend: svc, Owner: owner, AllowPrivate: true, AllowHTTP: true, Lease: time.Minute, Timeout: 5 * time.Second})
}

// drain runs the sender until no endpoint has work due.
func drain(t *testing.T, s *webhook.Sender) {
	t.Helper()
	for range 1000 {
		ran, err := s.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ran {
			return
		}
	}
	t.Fatal("the sender never ran out of work")
}

var memoryEvents = []string{trove.HookMemoryStoreCreated, trove.HookMemoryStoreArchived, trove.HookMemoryStoreDeleted,
	trove.HookMemoryCreated, trove.HookMemoryUpdated, trove.HookMemoryDeleted, trove.HookSessionCreated, trove.HookSessionStatusTerminated}

// TestEveryDeliveryVerifies: each change is one event, delivered in the
// order of the changes, each verified by the SDK's Unwrap, with the data
// the SDK's types name; what an endpoint does not subscribe to and what
// another workspace does are not sent.
func TestEveryDeliveryVerifies(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r, only := newReceiver(t), newReceiver(t)
		e.hook(r, memoryEvents...)
		e.hook(only, trove.HookMemoryStoreDeleted)
		other := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_other", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_o"}})
		if _, err := e.svc.CreateStore(other, trove.CreateStoreParams{Name: "elsewhere"}); err != nil {
			t.Fatal(err)
		}
		st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "notes"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "one"})
		if err != nil {
			t.Fatal(err)
		}
		two := "two"
		if _, err := e.svc.UpdateMemory(e.ctx, st.ID, m.ID, trove.UpdateMemoryParams{Content: &two}); err != nil {
			t.Fatal(err)
		}
		// A refused change queues nothing.
		if _, err := e.svc.CreateMemory(e.ctx, st.ID, trove.CreateMemoryParams{Path: "/a.md", Content: "clash"}); err == nil {
			t.Fatal("a second memory at the same path was accepted")
		}
		if err := e.svc.DeleteMemory(e.ctx, st.ID, m.ID, ""); err != nil {
			t.Fatal(err)
		}
		se, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.EndSession(e.ctx, se.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.ArchiveStore(e.ctx, st.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.ArchiveStore(e.ctx, st.ID); err != nil { // already archived: no second event
			t.Fatal(err)
		}
		if err := e.svc.DeleteStore(e.ctx, st.ID); err != nil {
			t.Fatal(err)
		}
		drain(t, newSender(e.svc, "n1"))

		want := []string{"memory_store.created", "trove.memory.created", "trove.memory.updated", "trove.memory.deleted",
			"session.created", "session.status_terminated", "memory_store.archived", "memory_store.deleted"}
		if diff := cmp.Diff(want, r.types()); diff != "" {
			t.Fatalf("events received (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"memory_store.deleted"}, only.types()); diff != "" {
			t.Errorf("the memory_store.deleted endpoint got (-want +got):\n%s", diff)
		}
		for _, id := range r.ids {
			ev := r.events[id]
			d := ev.Data
			if d.WorkspaceID != ws || d.OrganizationID != trove.WebhookOrganizationID || ev.Type != "event" || !strings.HasPrefix(ev.ID, "whe_") || ev.CreatedAt.IsZero() {
				t.Errorf("event %s: %s", id, r.raw[id])
			}
			switch v := d.AsAny().(type) {
			case anthropic.BetaWebhookMemoryStoreCreatedEventData:
				if v.ID != st.ID {
					t.Errorf("memory_store.created names %s, want %s", v.ID, st.ID)
				}
			case anthropic.BetaWebhookMemoryStoreDeletedEventData:
				if v.ID != st.ID {
					t.Errorf("memory_store.deleted names %s, want %s", v.ID, st.ID)
				}
			case anthropic.BetaWebhookSessionStatusTerminatedEventData:
				if v.ID != se.ID {
					t.Errorf("session.status_terminated names %s, want %s", v.ID, se.ID)
				}
			case nil: // trove.memory.*: Trove's extension members
				var ext struct {
					Data struct {
						ID          string `json:"id"`
						Store       string `json:"memory_store_id"`
						Version     string `json:"memory_version_id"`
						Path        string `json:"path"`
						Seq         int64  `json:"seq"`
						WorkspaceID string `json:"workspace_id"`
					} `json:"data"`
				}
				if err := json.Unmarshal([]byte(r.raw[id]), &ext); err != nil {
					t.Fatal(err)
				}
				if ext.Data.ID != m.ID || ext.Data.Store != st.ID || !strings.HasPrefix(ext.Data.Version, "memver_") || ext.Data.Path != "/a.md" || ext.Data.Seq < 1 {
					t.Errorf("%s data = %+v", d.Type, ext.Data)
				}
			}
		}
		// The delivery log: every one delivered at its first attempt.
		page, err := e.svc.ListWebhookDeliveries(e.ctx, mustFirstHook(t, e).ID, trove.ListDeliveriesParams{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != len(want) {
			t.Fatalf("delivery log has %d entries, want %d", len(page.Data), len(want))
		}
		for i, d := range page.Data {
			if d.Status != trove.DeliveryDelivered || d.Attempts != 1 || d.LastStatus != 204 || d.DeliveredAt == nil || d.EventType != want[len(want)-1-i] {
				t.Errorf("log entry %d = %+v", i, d)
			}
		}
	})
}

func mustFirstHook(t *testing.T, e *env) *trove.Webhook {
	t.Helper()
	p, err := e.svc.ListWebhooks(e.ctx, trove.ListWebhooksParams{Asc: true})
	if err != nil || len(p.Data) == 0 {
		t.Fatalf("ListWebhooks = %+v, %v", p, err)
	}
	return &p.Data[0]
}

// TestReceiverDownThenBack: while the receiver fails, the head delivery is
// retried with growing waits and nothing overtakes it; once it answers,
// every event arrives, in order, once each by ID, and the log shows the
// failed attempts' error.
func TestReceiverDownThenBack(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r := newReceiver(t)
		h := e.hook(r, trove.HookMemoryStoreCreated)
		r.set(func(r *receiver) { r.down = true })
		var stores []string
		mk := func() {
			st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, st.ID)
		}
		s := newSender(e.svc, "n1")
		mk()
		// Jitter 0: the waits are half of 10 s, 20 s, 40 s.
		drain(t, s) // attempt 1 fails; retry in 5 s
		mk()
		mk()
		drain(t, s) // nothing due: the queue waits behind its head
		e.clk.Add(4 * time.Second)
		drain(t, s)
		if n := attempts(t, e, h.ID); n != 1 {
			t.Fatalf("%d attempts before the first retry was due", n)
		}
		e.clk.Add(time.Second)
		drain(t, s) // attempt 2 fails; retry in 10 s
		e.clk.Add(10 * time.Second)
		drain(t, s) // attempt 3 fails; retry in 20 s
		if got := r.types(); len(got) != 0 {
			t.Fatalf("received %v while down", got)
		}
		page, err := e.svc.ListWebhookDeliveries(e.ctx, h.ID, trove.ListDeliveriesParams{})
		if err != nil {
			t.Fatal(err)
		}
		head := page.Data[len(page.Data)-1]
		if head.Attempts != 3 || head.Status != trove.DeliveryPending || head.LastStatus != 503 || head.LastError != "HTTP 503" ||
			!head.NextAttemptAt.Equal(e.clk.Now().Add(20*time.Second)) {
			t.Fatalf("head of the queue after 3 failures = %+v", head)
		}
		for _, d := range page.Data[:len(page.Data)-1] {
			if d.Attempts != 0 {
				t.Errorf("%s was attempted (%d) while the head was failing", d.EventID, d.Attempts)
			}
		}
		r.set(func(r *receiver) { r.down = false })
		mk()
		e.clk.Add(20 * time.Second)
		drain(t, s)
		var got []string
		for _, id := range r.ids {
			got = append(got, r.events[id].Data.ID)
		}
		if diff := cmp.Diff(stores, got); diff != "" {
			t.Fatalf("stores announced after the receiver came back (-want +got):\n%s", diff)
		}
		if r.posts != len(stores) {
			t.Errorf("%d successful posts for %d events", r.posts, len(stores))
		}
	})
}

// attempts returns the attempts made at the head of the endpoint's queue
// (its oldest delivery).
func attempts(t *testing.T, e *env, hookID string) int {
	t.Helper()
	page, err := e.svc.ListWebhookDeliveries(e.ctx, hookID, trove.ListDeliveriesParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return page.Data[len(page.Data)-1].Attempts
}

// dropRecords is a backend whose sender dies after its attempts: it
// records nothing and never releases (a kill -9 after the POST).
type dropRecords struct{ *core.Service }

func (dropRecords) RecordWebhookAttempt(context.Context, *trove.WebhookDelivery, core.WebhookAttempt) error {
	return errDied
}

func (dropRecords) ReleaseWebhook(context.Context, *core.WebhookClaim) error { return nil }

var errDied = &trove.Error{Code: trove.EUNAVAILABLE, Message: "the node died"}

// TestSenderDiesMidDelivery: a sender that dies during an attempt (the
// receiver got the request, nothing was recorded) leaves the endpoint
// leased; once the lease expires, a new sender over the same database
// (another node) sends it again with the same webhook-id, then the rest:
// nothing lost, and the receiver's dedupe by ID sees each event once.
func TestSenderDiesMidDelivery(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r := newReceiver(t)
		e.hook(r, trove.HookMemoryStoreCreated)
		var stores []string
		for range 3 {
			st, err := e.svc.CreateStore(e.ctx, trove.CreateStoreParams{Name: "s"})
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, st.ID)
		}
		release, held := make(chan struct{}), make(chan string, 1)
		r.set(func(r *receiver) { r.hold, r.held = release, held })
		dying := webhook.New(webhook.Config{Backend: dropRecords{e.svc}, Owner: "dying", AllowPrivate: true, AllowHTTP: true, Lease: time.Minute, Timeout: 5 * time.Second})
		done := make(chan error, 1)
		go func() {
			_, err := dying.RunOnce(context.Background())
			done <- err
		}()
		first := <-held // the receiver has the first event; the sender is mid-delivery
		close(release)
		if err := <-done; trove.ErrorCode(err) != trove.EUNAVAILABLE {
			t.Fatalf("the dying sender ended with %v", err)
		}
		// A second node over the same database: nothing to claim while
		// the dead node's lease lasts, everything after.
		node2 := e.node()
		s2 := newSender(node2, "n2")
		drain(t, s2)
		if r.posts != 1 {
			t.Fatalf("%d posts before the lease expired, want the dead node's 1", r.posts)
		}
		e.clk.Add(time.Minute)
		drain(t, s2)
		var got []string
		for _, id := range r.ids {
			got = append(got, r.events[id].Data.ID)
		}
		if diff := cmp.Diff(stores, got); diff != "" {
			t.Fatalf("stores announced (-want +got):\n%s", diff)
		}
		if r.ids[0] != first || r.posts != 4 {
			t.Errorf("first id %s (held %s), %d posts; want the held event sent again once (4 posts)", r.ids[0], first, r.posts)
		}
	})
}

// TestAgentAndEnvironmentEvents: agents' and environments' changes are
// the SDK's agent.* and environment.* events, verified and typed by the
// SDK, in order; a no-op update sends nothing.
func TestAgentAndEnvironmentEvents(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r := newReceiver(t)
		e.hook(r, "agent.created", "agent.updated", "agent.archived", "environment.created", "environment.updated", "environment.archived", "environment.deleted")
		a, err := e.svc.CreateAgent(e.ctx, trove.CreateAgentParams{Name: "a", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}})
		if err != nil {
			t.Fatal(err)
		}
		sys := "be brief"
		if _, err := e.svc.UpdateAgent(e.ctx, a.ID, trove.UpdateAgentParams{System: &sys}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.UpdateAgent(e.ctx, a.ID, trove.UpdateAgentParams{System: &sys}); err != nil { // no change
			t.Fatal(err)
		}
		if _, err := e.svc.ArchiveAgent(e.ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		en, err := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "laptop"})
		if err != nil {
			t.Fatal(err)
		}
		name := "desk"
		if _, err := e.svc.UpdateEnvironment(e.ctx, en.ID, trove.UpdateEnvironmentParams{Name: &name}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.ArchiveEnvironment(e.ctx, en.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteEnvironment(e.ctx, en.ID); err != nil {
			t.Fatal(err)
		}
		drain(t, newSender(e.svc, "n1"))
		want := []string{"agent.created", "agent.updated", "agent.archived", "environment.created", "environment.updated", "environment.archived", "environment.deleted"}
		if diff := cmp.Diff(want, r.types()); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		for i, id := range r.ids {
			ev := r.events[id]
			var got string
			switch v := ev.Data.AsAny().(type) {
			case anthropic.BetaWebhookAgentCreatedEventData:
				got = v.ID
			case anthropic.BetaWebhookAgentUpdatedEventData:
				got = v.ID
			case anthropic.BetaWebhookAgentArchivedEventData:
				got = v.ID
			case anthropic.BetaWebhookEnvironmentCreatedEventData:
				got = v.ID
			case anthropic.BetaWebhookEnvironmentUpdatedEventData:
				got = v.ID
			case anthropic.BetaWebhookEnvironmentArchivedEventData:
				got = v.ID
			case anthropic.BetaWebhookEnvironmentDeletedEventData:
				got = v.ID
			}
			if wantID := map[bool]string{true: a.ID, false: en.ID}[i < 3]; got != wantID {
				t.Errorf("event %d (%s) names %q, want %s", i, ev.Data.Type, got, wantID)
			}
		}
	})
}

// TestManagedSessionStatusEvents: a managed session's status changes,
// made by the agent loop's appends (no caller principal), are the SDK's
// session.status_* events; archiving and deleting follow.
func TestManagedSessionStatusEvents(t *testing.T) {
	t.Parallel()
	drivers(t, func(t *testing.T, e *env) {
		r := newReceiver(t)
		e.hook(r, "session.created", "session.status_run_started", "session.status_idled", "session.updated", "session.archived", "session.deleted", "session.status_terminated")
		ag, err := e.svc.CreateAgent(e.ctx, trove.CreateAgentParams{Name: "a", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}})
		if err != nil {
			t.Fatal(err)
		}
		en, err := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "laptop"})
		if err != nil {
			t.Fatal(err)
		}
		se, _, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: ag.ID}, EnvironmentID: en.ID})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.AppendAgentEvents(context.Background(), se.ID, []trove.NewSessionEvent{{Type: trove.EventSessionStatusRunning}}, core.AgentEventsOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.AppendAgentEvents(context.Background(), se.ID, []trove.NewSessionEvent{
			{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"done"}]}`},
			{Type: trove.EventSessionStatusIdle, Body: `{"stop_reason":{"type":"end_turn"}}`},
		}, core.AgentEventsOptions{}); err != nil {
			t.Fatal(err)
		}
		title := "renamed"
		if _, err := e.svc.UpdateSession(e.ctx, se.ID, trove.UpdateSessionParams{Title: &title}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.ArchiveSession(e.ctx, se.ID); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.DeleteSession(e.ctx, se.ID); err != nil {
			t.Fatal(err)
		}
		drain(t, newSender(e.svc, "n1"))
		want := []string{"session.created", "session.status_run_started", "session.status_idled", "session.updated",
			"session.status_terminated", "session.archived", "session.deleted"}
		if diff := cmp.Diff(want, r.types()); diff != "" {
			t.Fatalf("events (-want +got):\n%s", diff)
		}
		for _, id := range r.ids {
			if d := r.events[id].Data; d.ID != se.ID {
				t.Errorf("%s names %s, want %s", d.Type, d.ID, se.ID)
			}
		}
	})
}
