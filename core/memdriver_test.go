package core_test

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// memDriver is a small in-memory storage.Driver used to exercise core's
// rules with the conformance suite independently of any database driver.
// Writes are serialized and copy-on-write, so a failed Write leaves no
// trace and a Read sees one consistent snapshot.
type memDriver struct {
	mu sync.RWMutex
	st *memState
}

type memKey struct {
	k    trove.APIKey
	hash []byte
}

type memSession struct {
	s    trove.Session
	hash []byte
}

type memState struct {
	stores   map[string]trove.Store
	memories map[string]trove.Memory
	versions map[string]trove.MemoryVersion
	keys     map[string]memKey
	sessions map[string]memSession
	consoles map[string]storage.ConsoleSession // by string(token hash)
}

func newMemDriver() *memDriver {
	return &memDriver{st: &memState{
		stores: map[string]trove.Store{}, memories: map[string]trove.Memory{},
		versions: map[string]trove.MemoryVersion{}, keys: map[string]memKey{}, sessions: map[string]memSession{},
		consoles: map[string]storage.ConsoleSession{},
	}}
}

func (d *memDriver) Read(ctx context.Context, fn func(storage.Tx) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return fn(&memTx{st: d.st})
}

func (d *memDriver) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return (&memTx{st: d.st}).MemoryGet(ctx, storeID, id, withContent)
}

func (d *memDriver) Write(ctx context.Context, fn func(storage.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	c := &memState{
		stores: maps.Clone(d.st.stores), memories: maps.Clone(d.st.memories),
		versions: maps.Clone(d.st.versions), keys: maps.Clone(d.st.keys), sessions: maps.Clone(d.st.sessions),
		consoles: maps.Clone(d.st.consoles),
	}
	if err := fn(&memTx{st: c}); err != nil {
		return err
	}
	d.st = c
	return nil
}

func (d *memDriver) Close() error { return nil }

type memTx struct{ st *memState }

func notFound(what, id string) error {
	return trove.Errorf(trove.ENOTFOUND, "%s %s not found", what, id)
}

func (t *memTx) StoreInsert(ctx context.Context, s *trove.Store) error {
	c := *s
	c.Metadata = maps.Clone(s.Metadata)
	t.st.stores[s.ID] = c
	return nil
}

func (t *memTx) StoreGet(ctx context.Context, ws, id string) (*trove.Store, error) {
	s, ok := t.st.stores[id]
	if !ok || s.WorkspaceID != ws {
		return nil, notFound("memory store", id)
	}
	s.Metadata = maps.Clone(s.Metadata)
	return &s, nil
}

func (t *memTx) StoreLock(ctx context.Context, ws, id string) (*trove.Store, error) {
	return t.StoreGet(ctx, ws, id)
}

func (t *memTx) StoreUpdate(ctx context.Context, s *trove.Store) error {
	if _, ok := t.st.stores[s.ID]; !ok {
		return notFound("memory store", s.ID)
	}
	return t.StoreInsert(ctx, s)
}

func inRange(at time.Time, r trove.TimeRange) bool {
	return (r.GTE == nil || !at.Before(*r.GTE)) && (r.LTE == nil || !at.After(*r.LTE))
}

func before(at time.Time, id string, p *storage.Position) bool {
	if p == nil {
		return true
	}
	if c := at.Compare(p.CreatedAt); c != 0 {
		return c < 0
	}
	return id < p.ID
}

func desc[T any](xs []T, key func(T) (time.Time, string)) {
	slices.SortFunc(xs, func(a, b T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		if c := tb.Compare(ta); c != 0 {
			return c
		}
		return cmp.Compare(ib, ia)
	})
}

func limitTo[T any](xs []T, n int) []T {
	if n > 0 && len(xs) > n {
		return xs[:n]
	}
	return xs
}

func (t *memTx) StoreList(ctx context.Context, p storage.StoreListParams) ([]trove.Store, error) {
	var out []trove.Store
	for _, s := range t.st.stores {
		if s.WorkspaceID != p.WorkspaceID || (s.ArchivedAt != nil && !p.IncludeArchived) ||
			!inRange(s.CreatedAt, p.CreatedAt) || !before(s.CreatedAt, s.ID, p.Before) {
			continue
		}
		s.Metadata = maps.Clone(s.Metadata)
		out = append(out, s)
	}
	desc(out, func(s trove.Store) (time.Time, string) { return s.CreatedAt, s.ID })
	return limitTo(out, p.Limit), nil
}

func (t *memTx) StoreDelete(ctx context.Context, id string) error {
	if _, ok := t.st.stores[id]; !ok {
		return notFound("memory store", id)
	}
	delete(t.st.stores, id)
	maps.DeleteFunc(t.st.memories, func(_ string, m trove.Memory) bool { return m.StoreID == id })
	maps.DeleteFunc(t.st.versions, func(_ string, v trove.MemoryVersion) bool { return v.StoreID == id })
	return nil
}

func memOut(m trove.Memory, withContent bool) *trove.Memory {
	if !withContent {
		m.Content = nil
	}
	return &m
}

func (t *memTx) MemoryInsert(ctx context.Context, m *trove.Memory) error {
	for _, o := range t.st.memories {
		if o.StoreID == m.StoreID && o.Path == m.Path {
			return trove.Errorf(trove.EPATHCONFLICT, "path %s is used", m.Path)
		}
	}
	t.st.memories[m.ID] = *m
	return nil
}

func (t *memTx) MemoryGet(ctx context.Context, storeID, id string, withContent bool) (*trove.Memory, error) {
	m, ok := t.st.memories[id]
	if !ok || m.StoreID != storeID {
		return nil, notFound("memory", id)
	}
	return memOut(m, withContent), nil
}

func (t *memTx) MemoryGetByPath(ctx context.Context, storeID, path string, withContent bool) (*trove.Memory, error) {
	for _, m := range t.st.memories {
		if m.StoreID == storeID && m.Path == path {
			return memOut(m, withContent), nil
		}
	}
	return nil, notFound("memory", path)
}

func (t *memTx) MemoryUpdate(ctx context.Context, m *trove.Memory) error {
	if _, ok := t.st.memories[m.ID]; !ok {
		return notFound("memory", m.ID)
	}
	t.st.memories[m.ID] = *m
	return nil
}

func (t *memTx) MemoryDelete(ctx context.Context, storeID, id string) error {
	if m, ok := t.st.memories[id]; !ok || m.StoreID != storeID {
		return notFound("memory", id)
	}
	delete(t.st.memories, id)
	return nil
}

func (t *memTx) MemoryCount(ctx context.Context, storeID string) (int, error) {
	n := 0
	for _, m := range t.st.memories {
		if m.StoreID == storeID {
			n++
		}
	}
	return n, nil
}

func (t *memTx) MemoryFindOverlap(ctx context.Context, storeID, path, excludeID string) (*trove.Memory, error) {
	var found []trove.Memory
	for _, m := range t.st.memories {
		if m.StoreID == storeID && m.ID != excludeID && trove.PathsOverlap(m.Path, path) {
			found = append(found, m)
		}
	}
	if len(found) == 0 {
		return nil, nil
	}
	slices.SortFunc(found, func(a, b trove.Memory) int { return strings.Compare(a.Path, b.Path) })
	return memOut(found[0], false), nil
}

func (t *memTx) MemoryList(ctx context.Context, p storage.MemoryListParams) ([]trove.Memory, error) {
	var out []trove.Memory
	for _, m := range t.st.memories {
		if m.StoreID == p.StoreID && strings.HasPrefix(m.Path, p.Prefix) && m.Path >= p.From {
			out = append(out, *memOut(m, p.WithContent))
		}
	}
	slices.SortFunc(out, func(a, b trove.Memory) int { return strings.Compare(a.Path, b.Path) })
	return limitTo(out, p.Limit), nil
}

func verOut(v trove.MemoryVersion, withContent bool) *trove.MemoryVersion {
	if !withContent {
		v.Content = nil
	}
	return &v
}

func (t *memTx) VersionInsert(ctx context.Context, v *trove.MemoryVersion) error {
	t.st.versions[v.ID] = *v
	return nil
}

func (t *memTx) VersionGet(ctx context.Context, storeID, id string, withContent bool) (*trove.MemoryVersion, error) {
	v, ok := t.st.versions[id]
	if !ok || v.StoreID != storeID {
		return nil, notFound("memory version", id)
	}
	return verOut(v, withContent), nil
}

func (t *memTx) VersionList(ctx context.Context, p storage.VersionListParams) ([]trove.MemoryVersion, error) {
	var out []trove.MemoryVersion
	for _, v := range t.st.versions {
		a := trove.Actor{}
		if v.CreatedBy != nil {
			a = *v.CreatedBy
		}
		if v.StoreID != p.StoreID || (p.MemoryID != "" && v.MemoryID != p.MemoryID) ||
			(p.SessionID != "" && a.SessionID != p.SessionID) || (p.APIKeyID != "" && a.APIKeyID != p.APIKeyID) ||
			(p.ServiceAccountID != "" && a.ServiceAccountID != p.ServiceAccountID) ||
			(p.Operation != "" && v.Operation != p.Operation) || !inRange(v.CreatedAt, p.CreatedAt) ||
			!before(v.CreatedAt, v.ID, p.Before) {
			continue
		}
		out = append(out, *verOut(v, p.WithContent))
	}
	desc(out, func(v trove.MemoryVersion) (time.Time, string) { return v.CreatedAt, v.ID })
	return limitTo(out, p.Limit), nil
}

func (t *memTx) VersionRedact(ctx context.Context, storeID, id string, at time.Time, by trove.Actor) error {
	v, ok := t.st.versions[id]
	if !ok || v.StoreID != storeID {
		return notFound("memory version", id)
	}
	v.Path, v.Content, v.SizeBytes, v.SHA256 = nil, nil, nil, nil
	v.RedactedAt, v.RedactedBy = &at, &by
	t.st.versions[id] = v
	return nil
}

func (t *memTx) VersionDeleteExpired(ctx context.Context, cutoff time.Time) (int, error) {
	current := map[string]bool{}
	for _, m := range t.st.memories {
		current[m.VersionID] = true
	}
	n := 0
	for id, v := range t.st.versions {
		if v.CreatedAt.Before(cutoff) && !current[id] {
			delete(t.st.versions, id)
			n++
		}
	}
	return n, nil
}

func (t *memTx) KeyInsert(ctx context.Context, k *trove.APIKey, hash []byte) error {
	t.st.keys[k.ID] = memKey{*k, slices.Clone(hash)}
	return nil
}

func (t *memTx) KeyGetByHash(ctx context.Context, hash []byte) (*trove.APIKey, error) {
	for _, k := range t.st.keys {
		if bytes.Equal(k.hash, hash) {
			c := k.k
			return &c, nil
		}
	}
	return nil, notFound("API key", "")
}

func (t *memTx) KeyList(ctx context.Context, ws string) ([]trove.APIKey, error) {
	var out []trove.APIKey
	for _, k := range t.st.keys {
		if ws == "" || k.k.WorkspaceID == ws {
			out = append(out, k.k)
		}
	}
	slices.SortFunc(out, func(a, b trove.APIKey) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (t *memTx) KeyRevoke(ctx context.Context, id string, at time.Time) error {
	k, ok := t.st.keys[id]
	if !ok {
		return notFound("API key", id)
	}
	k.k.RevokedAt = &at
	t.st.keys[id] = k
	return nil
}

func (t *memTx) SessionInsert(ctx context.Context, s *trove.Session, hash []byte) error {
	c := *s
	c.Stores = slices.Clone(s.Stores)
	t.st.sessions[s.ID] = memSession{c, slices.Clone(hash)}
	return nil
}

func (t *memTx) SessionGet(ctx context.Context, ws, id string) (*trove.Session, error) {
	s, ok := t.st.sessions[id]
	if !ok || s.s.WorkspaceID != ws {
		return nil, notFound("session", id)
	}
	c := s.s
	c.Stores = slices.Clone(c.Stores)
	return &c, nil
}

func (t *memTx) SessionGetByTokenHash(ctx context.Context, hash []byte) (*trove.Session, error) {
	for _, s := range t.st.sessions {
		if bytes.Equal(s.hash, hash) {
			c := s.s
			c.Stores = slices.Clone(c.Stores)
			return &c, nil
		}
	}
	return nil, notFound("session", "")
}

func (t *memTx) SessionList(ctx context.Context, p storage.SessionListParams) ([]trove.Session, error) {
	var out []trove.Session
	for _, s := range t.st.sessions {
		if s.s.WorkspaceID != p.WorkspaceID || !before(s.s.CreatedAt, s.s.ID, p.Before) {
			continue
		}
		if p.StoreID != "" && !slices.ContainsFunc(s.s.Stores, func(a trove.SessionStore) bool { return a.StoreID == p.StoreID }) {
			continue
		}
		c := s.s
		c.Stores = slices.Clone(c.Stores)
		out = append(out, c)
	}
	desc(out, func(s trove.Session) (time.Time, string) { return s.CreatedAt, s.ID })
	return limitTo(out, p.Limit), nil
}

func (t *memTx) SessionEnd(ctx context.Context, id string, at time.Time) error {
	s, ok := t.st.sessions[id]
	if !ok {
		return notFound("session", id)
	}
	if s.s.EndedAt == nil {
		s.s.EndedAt = &at
		t.st.sessions[id] = s
	}
	return nil
}

func (t *memTx) ConsoleSessionInsert(ctx context.Context, s *storage.ConsoleSession) error {
	if _, ok := t.st.consoles[string(s.TokenHash)]; ok {
		return trove.Errorf(trove.ECONFLICT, "console session exists")
	}
	c := *s
	c.TokenHash = slices.Clone(s.TokenHash)
	t.st.consoles[string(s.TokenHash)] = c
	return nil
}

func (t *memTx) ConsoleSessionGet(ctx context.Context, hash []byte) (*storage.ConsoleSession, error) {
	s, ok := t.st.consoles[string(hash)]
	if !ok {
		return nil, notFound("console session", "")
	}
	s.TokenHash = slices.Clone(s.TokenHash)
	return &s, nil
}

func (t *memTx) ConsoleSessionDelete(ctx context.Context, hash []byte) error {
	delete(t.st.consoles, string(hash))
	return nil
}

func (t *memTx) ConsoleSessionDeleteExpired(ctx context.Context, now time.Time, revokedKeyID string) error {
	for h, s := range t.st.consoles {
		if s.ExpiresAt.Before(now) || (revokedKeyID != "" && s.KeyID == revokedKeyID) {
			delete(t.st.consoles, h)
		}
	}
	return nil
}
