package core

import (
	"context"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// resolveManaged resolves a new managed session's agent reference to the
// version it will run (the current one when p.Agent.Version is 0) and
// checks its environment, in the creating transaction. ENOTFOUND for an
// unknown agent, agent version or environment; EINVALID for an archived
// agent or environment.
func (s *Service) resolveManaged(ctx context.Context, tx storage.Tx, workspaceID string, p *trove.CreateSessionParams) (*trove.ManagedSession, error) {
	head, err := tx.AgentGet(ctx, workspaceID, p.Agent.ID, 0)
	if err != nil {
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil, trove.Errorf(trove.ENOTFOUND, "agent %s not found", p.Agent.ID)
		}
		return nil, err
	}
	if head.ArchivedAt != nil {
		return nil, errArchivedAgent(p.Agent.ID)
	}
	a := head
	if p.Agent.Version != 0 && p.Agent.Version != head.Version {
		if a, err = tx.AgentGet(ctx, workspaceID, p.Agent.ID, p.Agent.Version); err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return nil, trove.Errorf(trove.ENOTFOUND, "agent %s has no version %d (its latest is %d)", p.Agent.ID, p.Agent.Version, head.Version)
			}
			return nil, err
		}
	}
	env, err := tx.EnvironmentGet(ctx, workspaceID, p.EnvironmentID)
	if err != nil {
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil, trove.Errorf(trove.ENOTFOUND, "environment %s not found", p.EnvironmentID)
		}
		return nil, err
	}
	if env.ArchivedAt != nil {
		e := trove.Errorf(trove.EINVALID, "environment %s is archived; archived environments cannot run new sessions", env.ID)
		e.DetailCode = "archived"
		return nil, e
	}
	return &trove.ManagedSession{
		AgentID:       a.ID,
		AgentVersion:  a.Version,
		Agent:         a,
		EnvironmentID: env.ID,
		Budget:        p.Budget,
	}, nil
}

func errArchivedAgent(id string) error {
	e := trove.Errorf(trove.EINVALID, "agent %s is archived; archived agents cannot run new sessions", id)
	e.DetailCode = "archived"
	return e
}

// fillAgents sets the agent version of every managed session of ss (nil
// when the agent is gone).
func (s *Service) fillAgents(ctx context.Context, tx storage.Tx, ss []trove.Session) error {
	type key struct {
		id string
		v  int64
	}
	seen := map[key]*trove.Agent{}
	for i := range ss {
		m := ss[i].Managed
		if m == nil || m.Agent != nil {
			continue
		}
		k := key{m.AgentID, m.AgentVersion}
		a, ok := seen[k]
		if !ok {
			var err error
			a, err = tx.AgentGet(ctx, ss[i].WorkspaceID, m.AgentID, m.AgentVersion)
			if err != nil && trove.ErrorCode(err) != trove.ENOTFOUND {
				return err
			}
			seen[k] = a
		}
		m.Agent = a
	}
	return nil
}

// sessionWorkspace returns the workspace of a session, or ENOTFOUND.
func (s *Service) sessionWorkspace(ctx context.Context, tx storage.Tx, sessionID string) (string, error) {
	se, err := tx.SessionGet(ctx, "", sessionID)
	if err != nil {
		return "", err
	}
	return se.WorkspaceID, nil
}
