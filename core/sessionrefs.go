package core

import (
	"context"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// resolveManaged resolves a new managed session's agent reference to its
// version and checks its environment, in the creating transaction.
func (s *Service) resolveManaged(ctx context.Context, tx storage.Tx, workspaceID string, p *trove.CreateSessionParams) (*trove.ManagedSession, error) {
	return nil, trove.Errorf(trove.EINVALID, "agents are not available on this server yet")
}

// fillAgents sets the agent version of every managed session of ss.
func (s *Service) fillAgents(ctx context.Context, tx storage.Tx, ss []trove.Session) error {
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
