package core

import (
	"context"
	"maps"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// EnvironmentKeyPrefix starts every environment key secret; Authenticate
// dispatches on it.
const EnvironmentKeyPrefix = "trove_ek_"

const (
	maxEnvNameChars = 256
	maxEnvDescChars = 1024
	maxEnvPageSize  = 1000
)

var _ trove.EnvironmentService = (*Service)(nil)

func checkEnvType(field, typ string) error {
	switch typ {
	case "", trove.EnvironmentSelfHosted:
		return nil
	case "cloud":
		return invalidField(field, "Trove runs only self_hosted environments; cloud environments are not supported")
	}
	return invalidField(field, "must be %q, got %q", trove.EnvironmentSelfHosted, typ)
}

// CreateEnvironment implements trove.EnvironmentService.
func (s *Service) CreateEnvironment(ctx context.Context, p trove.CreateEnvironmentParams) (*trove.Environment, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage environments"); err != nil {
		return nil, err
	}
	if err := checkText("name", p.Name, 1, maxEnvNameChars, false); err != nil {
		return nil, err
	}
	if p.Description != nil {
		if err := checkText("description", *p.Description, 0, maxEnvDescChars, true); err != nil {
			return nil, err
		}
	}
	if err := checkEnvType("config.type", p.Type); err != nil {
		return nil, err
	}
	md := maps.Clone(p.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	if err := s.validateMetadata(md); err != nil {
		return nil, err
	}
	now := s.now()
	e := &trove.Environment{ID: trove.NewID(trove.PrefixEnv, now), WorkspaceID: pr.WorkspaceID, Name: p.Name,
		Description: cloneStr(p.Description), Type: trove.EnvironmentSelfHosted, Metadata: md, CreatedAt: now, UpdatedAt: now}
	if err := s.write(ctx, "CreateEnvironment", func(tx storage.Tx) error { return tx.EnvironmentInsert(ctx, e) }); err != nil {
		return nil, err
	}
	return cloneEnv(e), nil
}

func envNotFound(err error, id string) error {
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return trove.Errorf(trove.ENOTFOUND, "environment %s not found", id)
	}
	return err
}

// GetEnvironment implements trove.EnvironmentService.
func (s *Service) GetEnvironment(ctx context.Context, environmentID string) (*trove.Environment, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "read environments"); err != nil {
		return nil, err
	}
	var out *trove.Environment
	err = s.read(ctx, "GetEnvironment", func(tx storage.Tx) error {
		out, err = tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID)
		return envNotFound(err, environmentID)
	})
	if err != nil {
		return nil, err
	}
	return cloneEnv(out), nil
}

// GetEnvironmentInternal reads an environment of workspaceID with no
// principal: for the session code in core that checks a session's
// environment.
func (s *Service) GetEnvironmentInternal(ctx context.Context, workspaceID, environmentID string) (*trove.Environment, error) {
	var out *trove.Environment
	err := s.read(ctx, "GetEnvironment", func(tx storage.Tx) error {
		var err error
		out, err = tx.EnvironmentGet(ctx, workspaceID, environmentID)
		return envNotFound(err, environmentID)
	})
	if err != nil {
		return nil, err
	}
	return cloneEnv(out), nil
}

// UpdateEnvironment implements trove.EnvironmentService.
func (s *Service) UpdateEnvironment(ctx context.Context, environmentID string, p trove.UpdateEnvironmentParams) (*trove.Environment, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage environments"); err != nil {
		return nil, err
	}
	if p.Name != nil {
		if err := checkText("name", *p.Name, 1, maxEnvNameChars, false); err != nil {
			return nil, err
		}
	}
	if p.Description != nil {
		if err := checkText("description", *p.Description, 0, maxEnvDescChars, true); err != nil {
			return nil, err
		}
	}
	if err := checkEnvType("config.type", p.Type); err != nil {
		return nil, err
	}
	var out *trove.Environment
	err = s.write(ctx, "UpdateEnvironment", func(tx storage.Tx) error {
		e, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID)
		if err != nil {
			return envNotFound(err, environmentID)
		}
		if e.ArchivedAt != nil {
			return trove.Errorf(trove.EINVALID, "environment %s is archived; archived environments cannot be updated", environmentID)
		}
		next := cloneEnv(e)
		if p.Name != nil {
			next.Name = *p.Name
		}
		if p.ClearDescription {
			next.Description = nil
		} else if p.Description != nil {
			next.Description = cloneStr(p.Description)
		}
		for k, v := range p.Metadata {
			if v == nil || *v == "" {
				delete(next.Metadata, k)
			} else {
				next.Metadata[k] = *v
			}
		}
		if err := s.validateMetadata(next.Metadata); err != nil {
			return err
		}
		if next.Name == e.Name && equalStrPtr(next.Description, e.Description) && maps.Equal(next.Metadata, e.Metadata) {
			out = e
			return nil
		}
		next.UpdatedAt = s.now()
		if err := tx.EnvironmentUpdate(ctx, next); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cloneEnv(out), nil
}

// ListEnvironments implements trove.EnvironmentService.
func (s *Service) ListEnvironments(ctx context.Context, p trove.ListEnvironmentsParams) (*trove.Page[trove.Environment], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "read environments"); err != nil {
		return nil, err
	}
	limit, err := checkBigLimit(p.Limit, s.limits.DefaultPageSize)
	if err != nil {
		return nil, err
	}
	before, err := decodePosition(p.Cursor)
	if err != nil {
		return nil, err
	}
	var rows []trove.Environment
	err = s.read(ctx, "ListEnvironments", func(tx storage.Tx) error {
		rows, err = tx.EnvironmentList(ctx, storage.EnvironmentListParams{WorkspaceID: pr.WorkspaceID,
			IncludeArchived: p.IncludeArchived, Before: before, Limit: limit + 1})
		return err
	})
	if err != nil {
		return nil, err
	}
	return positionPage(rows, limit, cloneEnv, func(e *trove.Environment) (time.Time, string) { return e.CreatedAt, e.ID }), nil
}

// checkBigLimit resolves a limit of the lists that allow up to 1,000.
func checkBigLimit(limit, def int) (int, error) {
	if limit == 0 {
		return def, nil
	}
	if limit < 1 || limit > maxEnvPageSize {
		return 0, invalidField("limit", "must be between 1 and %d, got %d", maxEnvPageSize, limit)
	}
	return limit, nil
}

// ArchiveEnvironment implements trove.EnvironmentService.
func (s *Service) ArchiveEnvironment(ctx context.Context, environmentID string) (*trove.Environment, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage environments"); err != nil {
		return nil, err
	}
	var out *trove.Environment
	err = s.write(ctx, "ArchiveEnvironment", func(tx storage.Tx) error {
		e, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID)
		if err != nil {
			return envNotFound(err, environmentID)
		}
		if e.ArchivedAt == nil {
			now := s.now()
			e.ArchivedAt, e.UpdatedAt = &now, now
			if err := tx.EnvironmentUpdate(ctx, e); err != nil {
				return err
			}
		}
		out = e
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cloneEnv(out), nil
}

// DeleteEnvironment implements trove.EnvironmentService.
func (s *Service) DeleteEnvironment(ctx context.Context, environmentID string) error {
	pr, err := principal(ctx)
	if err != nil {
		return err
	}
	if err := notScoped(pr, "manage environments"); err != nil {
		return err
	}
	var keys []trove.EnvironmentKey
	defer func() {
		for _, k := range keys {
			s.authc.dropEnvKey(k.ID)
		}
	}()
	return s.write(ctx, "DeleteEnvironment", func(tx storage.Tx) error {
		if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
			return envNotFound(err, environmentID)
		}
		var before *storage.Position
		for {
			items, err := tx.WorkList(ctx, environmentID, before, 500)
			if err != nil {
				return err
			}
			for _, it := range items {
				if it.State != trove.WorkStopped {
					return trove.Errorf(trove.ECONFLICT, "environment %s has work that is not stopped (%s is %s); stop it first", environmentID, it.ID, it.State)
				}
			}
			if len(items) < 500 {
				break
			}
			last := items[len(items)-1]
			before = &storage.Position{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		if keys, err = tx.EnvironmentKeyList(ctx, environmentID); err != nil {
			return err
		}
		return tx.EnvironmentDelete(ctx, environmentID)
	})
}

// CreateEnvironmentKey implements trove.EnvironmentService.
func (s *Service) CreateEnvironmentKey(ctx context.Context, environmentID, name string) (*trove.EnvironmentKey, string, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := notScoped(pr, "manage environment keys"); err != nil {
		return nil, "", err
	}
	if err := checkText("name", name, 0, maxKeyNameChars, false); err != nil {
		return nil, "", err
	}
	secret := newSecret(EnvironmentKeyPrefix)
	var out *trove.EnvironmentKey
	err = s.write(ctx, "CreateEnvironmentKey", func(tx storage.Tx) error {
		e, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID)
		if err != nil {
			return envNotFound(err, environmentID)
		}
		if e.ArchivedAt != nil {
			return trove.Errorf(trove.EINVALID, "environment %s is archived; archived environments get no new keys", environmentID)
		}
		now := s.now()
		k := &trove.EnvironmentKey{ID: trove.NewID(trove.PrefixEnvKey, now), WorkspaceID: pr.WorkspaceID,
			EnvironmentID: environmentID, Name: name, Hint: secret[len(secret)-hintChars:], CreatedAt: now}
		if err := tx.EnvironmentKeyInsert(ctx, k, hashSecret(secret)); err != nil {
			return err
		}
		out = k
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return out, secret, nil
}

// ListEnvironmentKeys implements trove.EnvironmentService.
func (s *Service) ListEnvironmentKeys(ctx context.Context, environmentID string) ([]trove.EnvironmentKey, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage environment keys"); err != nil {
		return nil, err
	}
	var out []trove.EnvironmentKey
	err = s.read(ctx, "ListEnvironmentKeys", func(tx storage.Tx) error {
		if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
			return envNotFound(err, environmentID)
		}
		out, err = tx.EnvironmentKeyList(ctx, environmentID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RevokeEnvironmentKey implements trove.EnvironmentService. The key stops
// authenticating at once on this Service and at most Options.AuthCacheTTL
// later on other Services over the same database.
func (s *Service) RevokeEnvironmentKey(ctx context.Context, environmentID, keyID string) (*trove.EnvironmentKey, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notScoped(pr, "manage environment keys"); err != nil {
		return nil, err
	}
	defer s.authc.dropEnvKey(keyID)
	var out *trove.EnvironmentKey
	err = s.write(ctx, "RevokeEnvironmentKey", func(tx storage.Tx) error {
		if _, err := tx.EnvironmentGet(ctx, pr.WorkspaceID, environmentID); err != nil {
			return envNotFound(err, environmentID)
		}
		keys, err := tx.EnvironmentKeyList(ctx, environmentID)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if k.ID != keyID {
				continue
			}
			if k.RevokedAt == nil {
				now := s.now()
				if err := tx.EnvironmentKeyRevoke(ctx, k.ID, now); err != nil {
					return err
				}
				k.RevokedAt = &now
			}
			out = &k
			return nil
		}
		return trove.Errorf(trove.ENOTFOUND, "environment key %s not found in environment %s", keyID, environmentID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func cloneStr(p *string) *string {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func equalStrPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func cloneEnv(e *trove.Environment) *trove.Environment {
	c := *e
	c.Description = cloneStr(e.Description)
	c.Metadata = maps.Clone(e.Metadata)
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	if e.ArchivedAt != nil {
		t := *e.ArchivedAt
		c.ArchivedAt = &t
	}
	return &c
}
