package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Secret prefixes. Authenticate dispatches on them.
const (
	APIKeyPrefix       = "trove_sk_"
	SessionTokenPrefix = "trove_st_"
	secretRandomChars  = 40
	hintChars          = 4
	maxKeyNameChars    = 255
)

const base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newSecret returns prefix followed by 40 uniformly random base62
// characters (about 238 bits).
func newSecret(prefix string) string {
	out := make([]byte, 0, len(prefix)+secretRandomChars)
	out = append(out, prefix...)
	var buf [64]byte
	for len(out) < len(prefix)+secretRandomChars {
		if _, err := rand.Read(buf[:]); err != nil {
			panic("core: crypto/rand failed: " + err.Error())
		}
		for _, b := range buf {
			if b < 248 { // 248 = 4*62: rejection keeps the draw uniform
				out = append(out, base62Alphabet[b%62])
				if len(out) == len(prefix)+secretRandomChars {
					break
				}
			}
		}
	}
	return string(out)
}

func hashSecret(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// CreateKey creates an API key for workspaceID and returns it with its
// secret ("trove_sk_" + 40 base62 characters), which is shown once and
// stored only as a SHA-256 hash. It is an operator function: it needs no
// principal, but a session principal gets EFORBIDDEN and an API-key
// principal may only create keys for its own workspace (EFORBIDDEN).
// EINVALID for an empty workspace ID or a name longer than 255 characters or
// with control characters.
func (s *Service) CreateKey(ctx context.Context, workspaceID, name string) (*trove.APIKey, string, error) {
	if err := checkOperator(ctx, workspaceID); err != nil {
		return nil, "", err
	}
	if err := checkKey(workspaceID, name); err != nil {
		return nil, "", err
	}
	secret := newSecret(APIKeyPrefix)
	var out *trove.APIKey
	err := s.write(ctx, "CreateKey", func(tx storage.Tx) error {
		k, err := s.insertKey(ctx, tx, workspaceID, name, secret)
		out = k
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return out, secret, nil
}

// EnsureFirstKey creates the database's first API key: when there is no
// key at all (revoked ones count as keys), it creates one for workspaceID
// named name, as CreateKey does, and returns it with its secret and created
// true. Otherwise it creates nothing and returns the oldest key, "" and
// false. The check and the insert are one Write under Tx.KeysLock, so
// however many calls run at once, on however many nodes over one database,
// exactly one of them creates the key and every other one returns that key.
// (It does not wait for CreateKey: a key CreateKey adds meanwhile is one
// more key.)
//
// It is an operator function with CreateKey's rules and errors: a session
// principal gets EFORBIDDEN, an API-key principal of another workspace
// EFORBIDDEN, and for an API-key principal of workspaceID only its
// workspace's keys count (its own is one, so it gets that workspace's
// oldest key back). EINVALID as CreateKey, whether or not a key exists.
func (s *Service) EnsureFirstKey(ctx context.Context, workspaceID, name string) (key *trove.APIKey, secret string, created bool, err error) {
	if err := checkOperator(ctx, workspaceID); err != nil {
		return nil, "", false, err
	}
	if err := checkKey(workspaceID, name); err != nil {
		return nil, "", false, err
	}
	scope := ""
	if p := trove.PrincipalFrom(ctx); p != nil {
		scope = p.WorkspaceID
	}
	secret = newSecret(APIKeyPrefix)
	err = s.write(ctx, "EnsureFirstKey", func(tx storage.Tx) error {
		key, created = nil, false
		if err := tx.KeysLock(ctx); err != nil {
			return err
		}
		ks, err := tx.KeyList(ctx, scope)
		if err != nil {
			return err
		}
		if len(ks) > 0 {
			key = &ks[0]
			return nil
		}
		key, err = s.insertKey(ctx, tx, workspaceID, name, secret)
		created = err == nil
		return err
	})
	if err != nil {
		return nil, "", false, err
	}
	if !created {
		secret = ""
	}
	return key, secret, created, nil
}

// checkKey checks a new key's workspace ID and name (EINVALID).
func checkKey(workspaceID, name string) error {
	if strings.TrimSpace(workspaceID) == "" || !utf8.ValidString(workspaceID) || len(workspaceID) > 255 {
		return trove.Errorf(trove.EINVALID, "workspace ID must be 1 to 255 bytes of text")
	}
	if !utf8.ValidString(name) || utf8.RuneCountInString(name) > maxKeyNameChars || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return trove.Errorf(trove.EINVALID, "key name must be at most %d characters with no control characters", maxKeyNameChars)
	}
	return nil
}

// insertKey inserts, in tx, a key of workspaceID named name with secret.
func (s *Service) insertKey(ctx context.Context, tx storage.Tx, workspaceID, name, secret string) (*trove.APIKey, error) {
	now := s.now()
	k := &trove.APIKey{
		ID:          trove.NewID(trove.PrefixAPIKey, now),
		WorkspaceID: workspaceID,
		Name:        name,
		Hint:        secret[len(secret)-hintChars:],
		CreatedAt:   now,
	}
	if err := tx.KeyInsert(ctx, k, hashSecret(secret)); err != nil {
		return nil, err
	}
	return k, nil
}

// ListKeys lists the API keys of workspaceID (all workspaces when it is ""),
// oldest first, revoked ones included. Secrets are never returned. Operator
// function: a session principal gets EFORBIDDEN; an API-key principal sees
// only its own workspace.
func (s *Service) ListKeys(ctx context.Context, workspaceID string) ([]trove.APIKey, error) {
	if p := trove.PrincipalFrom(ctx); p != nil {
		if p.Session != nil {
			return nil, trove.Errorf(trove.EFORBIDDEN, "a session credential cannot manage API keys")
		}
		workspaceID = p.WorkspaceID
	}
	var out []trove.APIKey
	err := s.read(ctx, "ListKeys", func(tx storage.Tx) error {
		ks, err := tx.KeyList(ctx, workspaceID)
		out = ks
		return err
	})
	if out == nil && err == nil {
		out = []trove.APIKey{}
	}
	return out, err
}

// RevokeKey revokes an API key; its secret stops authenticating at once on
// this Service (its cached verification, if any, is dropped before
// RevokeKey returns) and, on other Services over the same database, at most
// their Options.AuthCacheTTL later. Revoking a revoked key keeps the first
// revocation time. ENOTFOUND for an unknown key (or, for an API-key
// principal, a key of another workspace); EFORBIDDEN for a session
// principal.
func (s *Service) RevokeKey(ctx context.Context, id string) error {
	p := trove.PrincipalFrom(ctx)
	if p != nil && p.Session != nil {
		return trove.Errorf(trove.EFORBIDDEN, "a session credential cannot manage API keys")
	}
	// Dropped after the write, whatever its outcome: a lookup that read the
	// key before the commit must not stay cached.
	defer s.authc.dropKey(id)
	return s.write(ctx, "RevokeKey", func(tx storage.Tx) error {
		ws := ""
		if p != nil {
			ws = p.WorkspaceID
		}
		ks, err := tx.KeyList(ctx, ws)
		if err != nil {
			return err
		}
		for _, k := range ks {
			if k.ID != id {
				continue
			}
			if k.RevokedAt != nil {
				return nil
			}
			// Its console sessions end too: ConsoleAuthenticate checks the
			// key on every request (and then deletes them, saying why).
			return tx.KeyRevoke(ctx, id, s.now())
		}
		return trove.Errorf(trove.ENOTFOUND, "API key %s not found", id)
	})
}

// checkOperator allows a call without principal, or from an API-key
// principal of workspaceID.
func checkOperator(ctx context.Context, workspaceID string) error {
	p := trove.PrincipalFrom(ctx)
	if p == nil {
		return nil
	}
	if p.Session != nil {
		return trove.Errorf(trove.EFORBIDDEN, "a session credential cannot manage API keys")
	}
	if p.WorkspaceID != workspaceID {
		return trove.Errorf(trove.EFORBIDDEN, "an API key can only manage keys of its own workspace")
	}
	return nil
}

// Authenticate turns a bearer secret into a Principal: an API key
// ("trove_sk_…") acts as an api_actor in its workspace; a session token
// ("trove_st_…") acts as a session_actor limited to the session's attached
// stores. EUNAUTHENTICATED for an unknown, malformed, revoked or ended
// credential.
//
// With Options.AuthCacheTTL, a credential verified less than that long ago
// is not read again; see RevokeKey and EndSession for what that means for
// revocation.
func (s *Service) Authenticate(ctx context.Context, secret string) (*trove.Principal, error) {
	if len(secret) > maxSecretLen {
		return nil, errBadCredential()
	}
	var buf [maxSecretLen]byte // hashed from the stack: no allocation per request
	hash := sha256.Sum256(append(buf[:0], secret...))
	now := s.clock()
	cached, gen := s.authc.get(hash, now)
	if cached != nil {
		return cached, nil
	}
	var out *trove.Principal
	key := append([]byte(nil), hash[:]...) // a copy for the lookups, so that hash stays on the stack on a hit
	switch {
	case strings.HasPrefix(secret, APIKeyPrefix):
		err := s.read(ctx, "Authenticate", func(tx storage.Tx) error {
			k, err := tx.KeyGetByHash(ctx, key)
			if err != nil {
				return err
			}
			if k.RevokedAt != nil {
				return trove.Errorf(trove.EUNAUTHENTICATED, "API key %s is revoked", k.ID)
			}
			out = &trove.Principal{
				WorkspaceID: k.WorkspaceID,
				Actor:       trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID},
			}
			return nil
		})
		if err != nil {
			return nil, authErr(err)
		}
	case strings.HasPrefix(secret, SessionTokenPrefix):
		err := s.read(ctx, "Authenticate", func(tx storage.Tx) error {
			se, err := tx.SessionGetByTokenHash(ctx, key)
			if err != nil {
				return err
			}
			if se.EndedAt != nil {
				return trove.Errorf(trove.EUNAUTHENTICATED, "session %s has ended", se.ID)
			}
			scope := &trove.SessionScope{SessionID: se.ID, Stores: make(map[string]trove.Access, len(se.Stores))}
			for _, a := range se.Stores {
				scope.Stores[a.StoreID] = a.Access
			}
			out = &trove.Principal{
				WorkspaceID: se.WorkspaceID,
				Actor:       trove.Actor{Type: trove.ActorSession, SessionID: se.ID},
				Session:     scope,
			}
			return nil
		})
		if err != nil {
			return nil, authErr(err)
		}
	case strings.HasPrefix(secret, EnvironmentKeyPrefix):
		err := s.read(ctx, "Authenticate", func(tx storage.Tx) error {
			var err error
			out, err = s.environmentPrincipal(ctx, tx, key)
			return err
		})
		if err != nil {
			return nil, authErr(err)
		}
	case strings.HasPrefix(secret, WorkTokenPrefix):
		err := s.read(ctx, "Authenticate", func(tx storage.Tx) error {
			var err error
			out, err = s.workPrincipal(ctx, tx, key)
			return err
		})
		if err != nil {
			return nil, authErr(err)
		}
	default:
		return nil, errBadCredential()
	}
	s.authc.put(hash, out, gen, now)
	return out, nil
}

// maxSecretLen is the longest bearer secret Authenticate looks up; longer
// ones are refused unread.
const maxSecretLen = 256

// errBadCredential is the error for an unknown or malformed credential (built
// only when needed: Authenticate's hit path allocates nothing for it).
func errBadCredential() error {
	return trove.Errorf(trove.EUNAUTHENTICATED, "invalid credential")
}

// authErr keeps EUNAUTHENTICATED and service errors (EUNAVAILABLE,
// EINTERNAL) and turns ENOTFOUND into errBadCredential.
func authErr(err error) error {
	switch trove.ErrorCode(err) {
	case trove.ENOTFOUND:
		return errBadCredential()
	}
	return err
}
