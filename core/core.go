// Package core is the only implementation of Trove's services: memory
// stores, memories, versions, sessions, API keys, authentication and
// version retention. It holds every rule and invariant of the memory stores
// API above a thin storage.Driver, which only stores and finds rows.
//
// Every service method acts as the *trove.Principal carried by its context
// (trove.WithPrincipal) and returns EUNAUTHENTICATED when there is none.
// Key management (CreateKey, ListKeys, RevokeKey) and retention
// (PurgeExpiredVersions, RunRetention) are operator functions and need no
// principal.
//
// One mutation is one storage Write transaction. Any change to a store's
// memories first takes the store's lock (storage.Tx.StoreLock), so the
// per-store invariants (no two overlapping paths, the memory limit,
// preconditions) hold across goroutines, processes and nodes.
package core

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Options configure a Service.
type Options struct {
	// Limits are the API limits. Zero fields take the documented defaults
	// (trove.DefaultLimits), so the zero value is the documented behaviour.
	Limits trove.Limits
	// Now is the clock; nil means time.Now. Times are truncated to the
	// microsecond (the precision every driver stores) and kept in UTC.
	Now func() time.Time
	// Logger receives internal error detail and retention reports; nil
	// discards.
	Logger *slog.Logger
	// AuthCacheTTL, when positive, lets Authenticate reuse a credential it
	// verified less than AuthCacheTTL ago (by Now) instead of reading it
	// again. A key revoked (RevokeKey) or a session ended (EndSession)
	// through this Service is refused at once all the same; a revocation
	// made by another process (another Service on the same database: trove
	// keys revoke, another node) takes effect here at most AuthCacheTTL
	// later. 0 reads the credential on every Authenticate.
	AuthCacheTTL time.Duration
	// ChangePoll is how often WaitChanges re-reads a store it is waiting
	// on, for commits nothing notified it of; 0 means DefaultChangePoll.
	ChangePoll time.Duration
	// Webhooks are the rules of webhook endpoints and deliveries
	// (webhooks.go); the zero value is the documented behaviour.
	Webhooks WebhookOptions
}

// Service implements trove.Services, trove.SessionService and
// trove.Authenticator over a storage.Driver.
type Service struct {
	db         storage.Driver
	limits     trove.Limits
	clock      func() time.Time
	log        *slog.Logger
	authc      *authCache // nil when Options.AuthCacheTTL is 0
	owners     storeOwners
	feed       feedHub       // wakes the change feed's waiters
	changePoll time.Duration // Options.ChangePoll with its default
	runs       runWakes      // the session agent loop's wakes (session_runs.go)
	events     feedHub       // wakes WaitEvents' waiters, by session ID
	eventPoll  time.Duration // WaitEvents' poll: changePoll, or notifiedEventPoll with a notifier
	hook       EventHook     // SetEventHook's
	work       workHub       // wakes the work queue's long polls (work.go)
	hooks      WebhookOptions
	hookWake   chan struct{} // a delivery was queued here (WebhookWakes)
	pruneWoken atomic.Bool   // this process woke the webhook log's prune job
	noHooks    noHookCache   // workspaces without endpoints (webhookemit.go)
}

var (
	_ trove.Services       = (*Service)(nil)
	_ trove.SessionService = (*Service)(nil)
	_ trove.Authenticator  = (*Service)(nil)
)

// New returns a Service over d. It does not take ownership of d: the caller
// closes it.
func New(d storage.Driver, o Options) *Service {
	s := &Service{db: d, limits: withDefaults(o.Limits), clock: o.Now, log: o.Logger, authc: newAuthCache(o.AuthCacheTTL),
		hooks: o.Webhooks.withDefaults(), hookWake: make(chan struct{}, 1)}
	s.noHooks.ttl = s.hooks.NoEndpointCache
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.changePoll = o.ChangePoll
	if s.changePoll <= 0 {
		s.changePoll = DefaultChangePoll
	}
	if vn, ok := d.(storage.VersionNotifier); ok {
		vn.NotifyVersions(s.feed.notify)
	}
	s.eventPoll = s.changePoll
	if en, ok := d.(storage.EventNotifier); ok {
		en.NotifyEvents(s.events.notify)
		s.eventPoll = max(s.changePoll, notifiedEventPoll)
	}
	return s
}

// Limits returns the limits in force (defaults filled in).
func (s *Service) Limits() trove.Limits { return s.limits }

// withDefaults fills every zero field of l with the documented default.
func withDefaults(l trove.Limits) trove.Limits {
	d := trove.DefaultLimits()
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.MaxContentBytes, d.MaxContentBytes)
	fill(&l.MaxMemoriesPerStore, d.MaxMemoriesPerStore)
	fill(&l.MaxPathBytes, d.MaxPathBytes)
	fill(&l.MaxPathSegments, d.MaxPathSegments)
	fill(&l.MaxNameChars, d.MaxNameChars)
	fill(&l.MaxDescriptionChars, d.MaxDescriptionChars)
	fill(&l.MaxMetadataPairs, d.MaxMetadataPairs)
	fill(&l.MaxMetadataKeyChars, d.MaxMetadataKeyChars)
	fill(&l.MaxMetadataValChars, d.MaxMetadataValChars)
	fill(&l.MaxStoresPerSession, d.MaxStoresPerSession)
	fill(&l.MaxInstructionsChars, d.MaxInstructionsChars)
	fill(&l.DefaultPageSize, d.DefaultPageSize)
	fill(&l.MaxPageSize, d.MaxPageSize)
	fill(&l.MaxFullPageSize, d.MaxFullPageSize)
	fill(&l.MaxEventBytes, d.MaxEventBytes)
	fill(&l.MaxEventsPerAppend, d.MaxEventsPerAppend)
	fill(&l.MaxSessionEvents, d.MaxSessionEvents)
	fill(&l.MaxDreamSessions, d.MaxDreamSessions)
	fill(&l.MaxDreamModelChars, d.MaxDreamModelChars)
	fill(&l.MaxStoresPerWorkspace, d.MaxStoresPerWorkspace)
	fill(&l.MaxStoreBytes, d.MaxStoreBytes)
	fill(&l.MaxVersionsPerStore, d.MaxVersionsPerStore)
	if l.MaxSessionEventBytes <= 0 {
		l.MaxSessionEventBytes = d.MaxSessionEventBytes
	}
	if l.VersionRetention <= 0 {
		l.VersionRetention = d.VersionRetention
	}
	return l
}

// now returns the current time in UTC at microsecond precision, so a value
// returned by a mutation equals the one later read back from the database.
func (s *Service) now() time.Time {
	return s.clock().UTC().Truncate(time.Microsecond)
}

// principal returns the caller, or EUNAUTHENTICATED.
func principal(ctx context.Context) (*trove.Principal, error) {
	p := trove.PrincipalFrom(ctx)
	if p == nil || p.WorkspaceID == "" {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "authentication required")
	}
	return p, nil
}

// notSession returns EFORBIDDEN when p is a session credential; what names
// the refused action for the message.
func notSession(p *trove.Principal, what string) error {
	if p.Session != nil {
		return trove.Errorf(trove.EFORBIDDEN, "a session credential cannot %s; use a workspace API key", what)
	}
	return nil
}

// actor returns a copy of the principal's actor for created_by, or nil
// ("author not recorded") for a principal without one.
func actor(p *trove.Principal) *trove.Actor {
	if p.Actor.Type == "" {
		return nil
	}
	a := p.Actor
	return &a
}

// read runs fn in a read transaction and maps its error.
func (s *Service) read(ctx context.Context, op string, fn func(storage.Tx) error) error {
	return s.mapErr(ctx, op, s.db.Read(ctx, fn))
}

// write runs fn in a write transaction and maps its error. fn sees the
// transaction through an emitTx, which queues the webhook deliveries of
// the changes fn makes in the same transaction (webhookemit.go).
func (s *Service) write(ctx context.Context, op string, fn func(storage.Tx) error) error {
	return s.mapErr(ctx, op, s.writeRaw(ctx, fn))
}

// writeRaw is write without the error mapping.
func (s *Service) writeRaw(ctx context.Context, fn func(storage.Tx) error) error {
	var et *emitTx
	start := time.Now()
	err := s.db.Write(ctx, func(tx storage.Tx) error {
		et = newEmitTx(s, tx, start)
		return fn(et)
	})
	if err == nil && et != nil && et.sent {
		s.wakeWebhooks()
	}
	return err
}

// mapErr turns any error into a *trove.Error: domain errors pass through,
// a cancelled context becomes EUNAVAILABLE, anything else is logged and
// becomes EINTERNAL with a generic message.
func (s *Service) mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var te *trove.Error
	if errors.As(err, &te) {
		if te.Code == trove.EINTERNAL || te.Code == trove.EUNAVAILABLE {
			s.log.ErrorContext(ctx, "core: storage error", "op", op, "code", te.Code, "err", err)
		}
		return te
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &trove.Error{Code: trove.EUNAVAILABLE, Message: "request cancelled or timed out", Err: err}
	}
	s.log.ErrorContext(ctx, "core: internal error", "op", op, "err", err)
	return &trove.Error{Code: trove.EINTERNAL, Message: "internal error", Err: err}
}

// checkLimit resolves a list limit: 0 means the default; 1..MaxPageSize is
// accepted; with full views the page is capped (not refused) at
// MaxFullPageSize.
func (s *Service) checkLimit(limit int, view trove.View) (int, error) {
	if limit == 0 {
		limit = s.limits.DefaultPageSize
	}
	if limit < 1 || limit > s.limits.MaxPageSize {
		return 0, trove.Errorf(trove.EINVALID, "limit must be between 1 and %d, got %d", s.limits.MaxPageSize, limit)
	}
	if view == trove.ViewFull && limit > s.limits.MaxFullPageSize {
		limit = s.limits.MaxFullPageSize
	}
	return limit, nil
}

// checkView validates a view; def is what "" means.
func checkView(v, def trove.View) (trove.View, error) {
	switch v {
	case "":
		return def, nil
	case trove.ViewBasic, trove.ViewFull:
		return v, nil
	}
	return "", trove.Errorf(trove.EINVALID, "view must be %q or %q, got %q", trove.ViewBasic, trove.ViewFull, v)
}
