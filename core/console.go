package core

import (
	"context"
	"crypto/sha256"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// ConsoleTokenPrefix starts every console session token.
const ConsoleTokenPrefix = "trove_cs_"

// ConsoleSessionTTL is how long a console sign-in lasts.
const ConsoleSessionTTL = 12 * time.Hour

var _ trove.ConsoleAuthenticator = (*Service)(nil)

// StartConsoleSession implements trove.ConsoleAuthenticator: apiKey must
// be a live API key ("trove_sk_…"). The session lasts ConsoleSessionTTL;
// starting one also deletes the expired ones.
func (s *Service) StartConsoleSession(ctx context.Context, apiKey string) (string, *trove.Principal, error) {
	if !strings.HasPrefix(apiKey, APIKeyPrefix) || len(apiKey) > 256 {
		return "", nil, trove.Errorf(trove.EUNAUTHENTICATED, "sign in with an API key (trove_sk_…); session tokens cannot sign in to the console")
	}
	h := sha256.Sum256([]byte(apiKey))
	var key *trove.APIKey
	err := s.read(ctx, "StartConsoleSession", func(tx storage.Tx) error {
		k, err := tx.KeyGetByHash(ctx, h[:])
		if err != nil {
			return err
		}
		if k.RevokedAt != nil {
			return trove.Errorf(trove.EUNAUTHENTICATED, "API key %s is revoked", k.ID)
		}
		key = k
		return nil
	})
	if err != nil {
		return "", nil, authErr(err)
	}
	token := newSecret(ConsoleTokenPrefix)
	th := sha256.Sum256([]byte(token))
	err = s.write(ctx, "StartConsoleSession", func(tx storage.Tx) error {
		now := s.now()
		if err := tx.ConsoleSessionDeleteExpired(ctx, now, ""); err != nil {
			return err
		}
		return tx.ConsoleSessionInsert(ctx, &storage.ConsoleSession{
			TokenHash: th[:], KeyID: key.ID, WorkspaceID: key.WorkspaceID,
			CreatedAt: now, ExpiresAt: now.Add(ConsoleSessionTTL),
		})
	})
	if err != nil {
		return "", nil, err
	}
	return token, consolePrincipal(key.WorkspaceID, key.ID), nil
}

func consolePrincipal(ws, keyID string) *trove.Principal {
	return &trove.Principal{WorkspaceID: ws, Actor: trove.NewActor(trove.ActorUser, trove.ConsoleUserID(keyID))}
}

// ConsoleAuthenticate implements trove.ConsoleAuthenticator with one read
// of the session and its key (no cache: a revocation anywhere counts at
// once).
func (s *Service) ConsoleAuthenticate(ctx context.Context, token string) (*trove.Principal, error) {
	if !strings.HasPrefix(token, ConsoleTokenPrefix) || len(token) > 256 {
		return nil, trove.Errorf(trove.EUNAUTHENTICATED, "not signed in")
	}
	th := sha256.Sum256([]byte(token))
	var cs *storage.ConsoleSession
	revoked := false
	err := s.read(ctx, "ConsoleAuthenticate", func(tx storage.Tx) error {
		var err error
		if cs, err = tx.ConsoleSessionGet(ctx, th[:]); err != nil {
			return err
		}
		keys, err := tx.KeyList(ctx, cs.WorkspaceID)
		if err != nil {
			return err
		}
		revoked = true
		for _, k := range keys {
			if k.ID == cs.KeyID {
				revoked = k.RevokedAt != nil
			}
		}
		return nil
	})
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, &trove.Error{Code: trove.EUNAUTHENTICATED, Message: "not signed in, or signed out", DetailCode: trove.ConsoleSignedOut}
	}
	if err != nil {
		return nil, err
	}
	if revoked {
		// Every console session of the key ends.
		_ = s.write(ctx, "ConsoleAuthenticate", func(tx storage.Tx) error {
			return tx.ConsoleSessionDeleteExpired(ctx, s.now(), cs.KeyID)
		})
		return nil, &trove.Error{Code: trove.EUNAUTHENTICATED, Message: "API key " + cs.KeyID + " was revoked: sign in with another key", DetailCode: trove.ConsoleKeyRevoked}
	}
	if !s.now().Before(cs.ExpiresAt) {
		return nil, &trove.Error{Code: trove.EUNAUTHENTICATED, Message: "the console session has expired: sign in again", DetailCode: trove.ConsoleExpired}
	}
	return consolePrincipal(cs.WorkspaceID, cs.KeyID), nil
}

// EndConsoleSession implements trove.ConsoleAuthenticator.
func (s *Service) EndConsoleSession(ctx context.Context, token string) error {
	th := sha256.Sum256([]byte(token))
	return s.write(ctx, "EndConsoleSession", func(tx storage.Tx) error { return tx.ConsoleSessionDelete(ctx, th[:]) })
}
