package core

import (
	"context"
	"strings"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// CheckActorCredential reports whether the credential behind actor, an
// actor of workspaceID that background work (a dream) acts for, is still
// valid: nil when it is; EUNAUTHENTICATED when the API key it names (an
// api_actor's key, or the key a console user_actor signed in with) was
// revoked or no longer exists, or when the actor names no key (a
// session_actor: background work never acts for one). Other errors
// (EUNAVAILABLE) say nothing about the credential. Operator function: no
// principal needed. It reads the database every call (no cache): a
// revocation made anywhere counts at once.
func (s *Service) CheckActorCredential(ctx context.Context, workspaceID string, actor trove.Actor) error {
	keyID := ""
	switch actor.Type {
	case trove.ActorAPI:
		keyID = actor.APIKeyID
	case trove.ActorUser:
		keyID, _ = strings.CutPrefix(actor.UserID, trove.ConsoleUserID(""))
	}
	if keyID == "" {
		id, _ := actor.ID()
		return trove.Errorf(trove.EUNAUTHENTICATED, "%s %s acts with no API key", actor.Type, id)
	}
	return s.read(ctx, "CheckActorCredential", func(tx storage.Tx) error {
		keys, err := tx.KeyList(ctx, workspaceID)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.ID == keyID {
				if k.RevokedAt != nil {
					return trove.Errorf(trove.EUNAUTHENTICATED, "API key %s was revoked", keyID)
				}
				return nil
			}
		}
		return trove.Errorf(trove.EUNAUTHENTICATED, "API key %s no longer exists", keyID)
	})
}
