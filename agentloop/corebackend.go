package agentloop

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// CoreBackend is the Backend over a local core.Service (trove serve).
type CoreBackend struct{ svc *core.Service }

// NewCoreBackend returns the Backend over svc and installs svc's event
// hook that wakes a managed session's run with the input that calls for
// it.
func NewCoreBackend(svc *core.Service) *CoreBackend {
	svc.StartSessionRuns()
	return &CoreBackend{svc: svc}
}

func (b *CoreBackend) ClaimSessionRun(ctx context.Context, owner string, lease time.Duration) (*core.SessionRun, error) {
	return b.svc.ClaimSessionRun(ctx, owner, lease)
}

func (b *CoreBackend) RenewSessionRun(ctx context.Context, sessionID, owner string, lease time.Duration) error {
	return b.svc.RenewSessionRun(ctx, sessionID, owner, lease)
}

func (b *CoreBackend) ReleaseSessionRun(ctx context.Context, sessionID, owner string, wakeSeq int64, done bool) error {
	return b.svc.ReleaseSessionRun(ctx, sessionID, owner, wakeSeq, done)
}

func (b *CoreBackend) SessionRunsWoken() <-chan struct{} { return b.svc.SessionRunsWoken() }

func (b *CoreBackend) TakeSessionRunWake() bool { return b.svc.TakeSessionRunWake() }

func (b *CoreBackend) Load(ctx context.Context, sessionID string, afterSeq int64) (*Spec, []trove.SessionEvent, error) {
	st, err := b.svc.LoadSessionRun(ctx, sessionID, max(afterSeq, 0))
	if err != nil {
		return nil, nil, err
	}
	return specOf(st), st.Events, nil
}

func (b *CoreBackend) Check(ctx context.Context, sessionID string) (*Spec, error) {
	st, err := b.svc.LoadSessionRun(ctx, sessionID, -1)
	if err != nil {
		return nil, err
	}
	return specOf(st), nil
}

func (b *CoreBackend) Append(ctx context.Context, sessionID, owner string, lease time.Duration, afterSeq int64, events []trove.NewSessionEvent) ([]trove.SessionEvent, int64, error) {
	return b.svc.AppendSessionRunEvents(ctx, sessionID, owner, lease, afterSeq, events)
}

func (b *CoreBackend) Changed(sessionID string) <-chan struct{} {
	return b.svc.SessionEventsChanged(sessionID)
}

// EnsureWork queues work for the session's environment unless it has live
// work (core.EnqueueSessionWork is idempotent that way).
func (b *CoreBackend) EnsureWork(ctx context.Context, sessionID string) error {
	st, err := b.svc.LoadSessionRun(ctx, sessionID, -1)
	if err != nil {
		return err
	}
	se := st.Session
	_, err = b.svc.EnqueueSessionWork(ctx, se.WorkspaceID, se.Managed.EnvironmentID, se.ID)
	return err
}

// specOf is what the loop needs of a session and its agent version.
func specOf(st *SessionRunState) *Spec {
	se, a := st.Session, st.Agent
	sp := &Spec{
		Status: string(se.Status),
		Ended:  se.EndedAt != nil || se.ArchivedAt != nil || se.Status == trove.SessionTerminated || st.CreatorRevoked,
		Model:  a.Model.ID,
		System: a.System,
		Stores: se.Stores,
	}
	for _, c := range a.EnabledTools() {
		if t, ok := ToolsetTool(c.Name); ok {
			t.Ask = c.PermissionPolicy == trove.PolicyAlwaysAsk
			sp.Tools = append(sp.Tools, t)
		}
	}
	for _, ct := range a.CustomTools() {
		var schema map[string]any
		_ = json.Unmarshal(ct.InputSchema, &schema)
		sp.Tools = append(sp.Tools, Tool{Name: ct.Name, Description: ct.Description, Schema: schema, Custom: true})
	}
	return sp
}

// SessionRunState is core's.
type SessionRunState = core.SessionRunState
