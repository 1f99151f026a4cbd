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
	seqs     map[string]int64                // store ID → the last Seq handed out
	events   map[string][]trove.SessionEvent // by session ID, in seq order
	dreams   map[string]trove.Dream
	heads    map[string][]byte                 // store ID → the chain hash of its newest version
	consoles map[string]storage.ConsoleSession // by string(token hash)
	jobs     map[string]storage.Job            // by kind + "/" + key
}

func newMemDriver() *memDriver {
	return &memDriver{st: &memState{
		stores: map[string]trove.Store{}, memories: map[string]trove.Memory{},
		versions: map[string]trove.MemoryVersion{}, keys: map[string]memKey{}, sessions: map[string]memSession{},
		seqs:   map[string]int64{},
		events: map[string][]trove.SessionEvent{}, dreams: map[string]trove.Dream{},
		heads:    map[string][]byte{},
		consoles: map[string]storage.ConsoleSession{},
		jobs:     map[string]storage.Job{},
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
		seqs:   maps.Clone(d.st.seqs),
		events: maps.Clone(d.st.events), dreams: maps.Clone(d.st.dreams),
		heads:    maps.Clone(d.st.heads),
		consoles: maps.Clone(d.st.consoles),
		jobs:     maps.Clone(d.st.jobs),
	}
	if err := fn(&memTx{st: c}); err != nil {
		return err
	}
	d.st = c
	return nil
}

func (d *memDriver) Close() error { return nil }

// memTx does not model agents, environments or the work queue: the
// embedded AgentTx is nil, and coretest.RunAgents runs over the real
// drivers only (storage/sqlite, storage/postgres).
type memTx struct {
	st *memState
	storage.AgentTx
	storage.WebhookTx // WebhookList only (memdriver_jobs_test.go)
}

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
	delete(t.st.seqs, id)
	delete(t.st.heads, id)
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

// StoreStats counts (the in-memory driver has no stored counters; the
// conformance suite checks what the counts must be).
func (t *memTx) StoreStats(ctx context.Context, storeID string) (storage.StoreStats, error) {
	if _, ok := t.st.stores[storeID]; !ok {
		return storage.StoreStats{}, notFound("memory store", storeID)
	}
	var st storage.StoreStats
	for _, m := range t.st.memories {
		if m.StoreID == storeID {
			st.MemoryCount++
			st.ContentBytes += int64(m.SizeBytes)
		}
	}
	for _, v := range t.st.versions {
		if v.StoreID == storeID {
			st.VersionCount++
		}
	}
	return st, nil
}

func (t *memTx) WorkspaceStoreCount(ctx context.Context, ws string) (int, error) {
	n := 0
	for _, s := range t.st.stores {
		if s.WorkspaceID == ws {
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
	if _, ok := t.st.stores[v.StoreID]; !ok {
		return notFound("memory store", v.StoreID)
	}
	t.st.seqs[v.StoreID]++
	v.Seq = t.st.seqs[v.StoreID]
	v.LeafHash = trove.VersionLeafHash(v)
	v.ChainHash = trove.VersionChainHash(t.st.heads[v.StoreID], v.Seq, v.LeafHash)
	t.st.heads[v.StoreID] = v.ChainHash
	t.st.versions[v.ID] = *v
	return nil
}

func (t *memTx) VersionScan(ctx context.Context, p storage.VersionScanParams) ([]trove.MemoryVersion, error) {
	out := []trove.MemoryVersion{}
	for _, v := range t.st.versions {
		if v.StoreID == p.StoreID && v.Seq > p.AfterSeq && (p.UpToSeq == 0 || v.Seq <= p.UpToSeq) {
			out = append(out, *verOut(v, p.WithContent))
		}
	}
	slices.SortFunc(out, func(a, b trove.MemoryVersion) int { return cmp.Compare(a.Seq, b.Seq) })
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

func (t *memTx) StoreSeq(ctx context.Context, storeID string) (int64, error) {
	if _, ok := t.st.stores[storeID]; !ok {
		return 0, notFound("memory store", storeID)
	}
	return t.st.seqs[storeID], nil
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

// KeysLock has nothing to do: a Write holds the driver's lock throughout.
func (t *memTx) KeysLock(ctx context.Context) error { return nil }

// memCloneSession copies s deeply (the managed part, metadata, stores).
func memCloneSession(s trove.Session) trove.Session {
	s.Stores = slices.Clone(s.Stores)
	s.Metadata = maps.Clone(s.Metadata)
	if s.Metadata == nil {
		s.Metadata = map[string]string{}
	}
	if s.Managed != nil {
		m := *s.Managed
		s.Managed = &m
	}
	return s
}

func (t *memTx) SessionInsert(ctx context.Context, s *trove.Session, hash []byte) error {
	t.st.sessions[s.ID] = memSession{memCloneSession(*s), slices.Clone(hash)}
	return nil
}

func (t *memTx) SessionGet(ctx context.Context, ws, id string) (*trove.Session, error) {
	s, ok := t.st.sessions[id]
	if !ok || (ws != "" && s.s.WorkspaceID != ws) {
		return nil, notFound("session", id)
	}
	c := memCloneSession(s.s)
	return &c, nil
}

func (t *memTx) SessionLock(ctx context.Context, ws, id string) (*trove.Session, error) {
	return t.SessionGet(ctx, ws, id)
}

func (t *memTx) SessionUpdate(ctx context.Context, s *trove.Session) error {
	old, ok := t.st.sessions[s.ID]
	if !ok {
		return notFound("session", s.ID)
	}
	c := memCloneSession(old.s)
	c.Title, c.Metadata, c.Status, c.UpdatedAt = s.Title, maps.Clone(s.Metadata), s.Status, s.UpdatedAt
	c.EndedAt, c.ArchivedAt = s.EndedAt, s.ArchivedAt
	if s.Managed != nil && c.Managed != nil {
		c.Managed.Usage, c.Managed.ActiveSeconds, c.Managed.RunningSince = s.Managed.Usage, s.Managed.ActiveSeconds, s.Managed.RunningSince
	}
	t.st.sessions[s.ID] = memSession{c, old.hash}
	return nil
}

func (t *memTx) SessionDelete(ctx context.Context, id string) error {
	if _, ok := t.st.sessions[id]; !ok {
		return notFound("session", id)
	}
	delete(t.st.sessions, id)
	delete(t.st.events, id)
	return nil
}

func (t *memTx) EventGet(ctx context.Context, sessionID, id string) (*trove.SessionEvent, error) {
	for _, e := range t.st.events[sessionID] {
		if e.ID == id {
			return &e, nil
		}
	}
	return nil, notFound("event", id)
}

func (t *memTx) EventListByRef(ctx context.Context, sessionID, refID string) ([]trove.SessionEvent, error) {
	out := []trove.SessionEvent{}
	for _, e := range t.st.events[sessionID] {
		if e.RefID == refID {
			out = append(out, e)
		}
	}
	return out, nil
}

func (t *memTx) SessionGetByTokenHash(ctx context.Context, hash []byte) (*trove.Session, error) {
	for _, s := range t.st.sessions {
		if bytes.Equal(s.hash, hash) {
			c := memCloneSession(s.s)
			return &c, nil
		}
	}
	return nil, notFound("session", "")
}

func (t *memTx) SessionList(ctx context.Context, p storage.SessionListParams) ([]trove.Session, error) {
	var out []trove.Session
	for _, s := range t.st.sessions {
		if s.s.WorkspaceID != p.WorkspaceID {
			continue
		}
		if p.Asc {
			if p.After != nil && !before(p.After.CreatedAt, p.After.ID, &storage.Position{CreatedAt: s.s.CreatedAt, ID: s.s.ID}) {
				continue
			}
		} else if !before(s.s.CreatedAt, s.s.ID, p.Before) {
			continue
		}
		if p.StoreID != "" && !slices.ContainsFunc(s.s.Stores, func(a trove.SessionStore) bool { return a.StoreID == p.StoreID }) {
			continue
		}
		m := s.s.Managed
		if p.AgentID != "" && (m == nil || m.AgentID != p.AgentID || (p.AgentVersion > 0 && m.AgentVersion != p.AgentVersion)) {
			continue
		}
		if len(p.Statuses) > 0 && !slices.Contains(p.Statuses, s.s.Status) {
			continue
		}
		if !p.IncludeArchived && s.s.ArchivedAt != nil {
			continue
		}
		if !inRange(s.s.CreatedAt, p.CreatedAt) || (p.CreatedAfter != nil && !s.s.CreatedAt.After(*p.CreatedAfter)) ||
			(p.CreatedBefore != nil && !s.s.CreatedAt.Before(*p.CreatedBefore)) {
			continue
		}
		out = append(out, memCloneSession(s.s))
	}
	desc(out, func(s trove.Session) (time.Time, string) { return s.CreatedAt, s.ID })
	if p.Asc {
		slices.Reverse(out)
	}
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

func (t *memTx) EventStats(ctx context.Context, sessionID string) (int, int64, error) {
	if _, ok := t.st.sessions[sessionID]; !ok {
		return 0, 0, notFound("session", sessionID)
	}
	var n int64
	for _, e := range t.st.events[sessionID] {
		n += int64(len(e.Body))
	}
	return len(t.st.events[sessionID]), n, nil
}

func (t *memTx) EventInsert(ctx context.Context, events []trove.SessionEvent) error {
	for _, e := range events {
		// A new slice, so a rolled-back Write leaves the old one intact.
		t.st.events[e.SessionID] = append(slices.Clip(t.st.events[e.SessionID]), e)
	}
	return nil
}

func (t *memTx) EventList(ctx context.Context, p storage.EventListParams) ([]trove.SessionEvent, error) {
	out := []trove.SessionEvent{}
	for _, e := range t.st.events[p.SessionID] {
		if p.Desc {
			if p.BeforeSeq > 0 && e.Seq >= p.BeforeSeq {
				continue
			}
		} else if e.Seq <= p.AfterSeq {
			continue
		}
		if len(p.Types) > 0 && !slices.Contains(p.Types, e.Type) {
			continue
		}
		if !inRange(e.ProcessedAt, p.CreatedAt) || (p.CreatedAfter != nil && !e.ProcessedAt.After(*p.CreatedAfter)) ||
			(p.CreatedBefore != nil && !e.ProcessedAt.Before(*p.CreatedBefore)) {
			continue
		}
		out = append(out, e)
	}
	if p.Desc {
		slices.Reverse(out)
	}
	out = limitTo(out, p.Limit)
	if p.MaxBytes > 0 {
		n := p.MaxBytes
		for i, e := range out {
			if n -= len(e.Body); n < 0 {
				return out[:i+1], nil
			}
		}
	}
	return out, nil
}

func cloneDream(d trove.Dream) *trove.Dream {
	d.SessionIDs = slices.Clone(d.SessionIDs)
	if d.Error != nil {
		e := *d.Error
		d.Error = &e
	}
	return &d
}

func (t *memTx) DreamInsert(ctx context.Context, d *trove.Dream) error {
	c := cloneDream(*d)
	c.LeaseOwner, c.LeaseExpiresAt, c.Attempts = "", nil, 0 // the job's
	t.st.dreams[d.ID] = *c
	return nil
}

// withLease fills a dream's lease from its job, as the drivers do.
func (t *memTx) withLease(d trove.Dream) *trove.Dream {
	c := cloneDream(d)
	if j, ok := t.st.jobs[storage.JobDream+"/"+d.ID]; ok {
		c.LeaseOwner, c.Attempts = j.LeaseOwner, int(j.Attempts)
		if j.LeaseExpiresAt != nil {
			u := *j.LeaseExpiresAt
			c.LeaseExpiresAt = &u
		}
	}
	return c
}

func (t *memTx) DreamGet(ctx context.Context, ws, id string) (*trove.Dream, error) {
	d, ok := t.st.dreams[id]
	if !ok || (ws != "" && d.WorkspaceID != ws) {
		return nil, notFound("dream", id)
	}
	return t.withLease(d), nil
}

func (t *memTx) DreamLock(ctx context.Context, ws, id string) (*trove.Dream, error) {
	return t.DreamGet(ctx, ws, id)
}

func (t *memTx) DreamUpdate(ctx context.Context, d *trove.Dream) error {
	if _, ok := t.st.dreams[d.ID]; !ok {
		return notFound("dream", d.ID)
	}
	c := cloneDream(*d)
	c.LeaseOwner, c.LeaseExpiresAt, c.Attempts = "", nil, 0
	t.st.dreams[d.ID] = *c
	return nil
}

func (t *memTx) DreamList(ctx context.Context, p storage.DreamListParams) ([]trove.Dream, error) {
	var out []trove.Dream
	for _, d := range t.st.dreams {
		switch {
		case d.WorkspaceID != p.WorkspaceID, !before(d.CreatedAt, d.ID, p.Before),
			!p.IncludeArchived && d.ArchivedAt != nil,
			len(p.Statuses) > 0 && !slices.Contains(p.Statuses, d.Status),
			p.CreatedAfter != nil && !d.CreatedAt.After(*p.CreatedAfter),
			p.CreatedBefore != nil && !d.CreatedAt.Before(*p.CreatedBefore):
			continue
		}
		out = append(out, *t.withLease(d))
	}
	desc(out, func(d trove.Dream) (time.Time, string) { return d.CreatedAt, d.ID })
	return limitTo(out, p.Limit), nil
}

func (t *memTx) DreamInPlaceBusy(ctx context.Context, storeID string, now time.Time) (bool, error) {
	for _, d := range t.st.dreams {
		l := t.withLease(d)
		if d.InputStoreID == storeID && d.OutputBehavior == trove.OutputUpdateExisting &&
			(!d.Status.Terminal() || (l.LeaseOwner != "" && l.LeaseExpiresAt.After(now))) {
			return true, nil
		}
	}
	return false, nil
}

// MemorySearch matches every term in the path or the content with
// trove.SearchQuery.Matches, one term at a time; the score counts the
// matches (a path match as four) per 50 words of content, so a memory
// about a word ranks above one that mentions it once in a longer text.
func (t *memTx) MemorySearch(ctx context.Context, p storage.MemorySearchParams) ([]storage.MemorySearchHit, error) {
	var out []storage.MemorySearchHit
	if len(p.Query.Terms) == 0 {
		return []storage.MemorySearchHit{}, nil
	}
	for _, m := range t.st.memories {
		st, ok := t.st.stores[m.StoreID]
		if !ok || st.WorkspaceID != p.WorkspaceID || !strings.HasPrefix(m.Path, p.Prefix) {
			continue
		}
		if len(p.StoreIDs) > 0 && !slices.Contains(p.StoreIDs, m.StoreID) || len(p.StoreIDs) == 0 && st.ArchivedAt != nil {
			continue
		}
		n, all := 0, true
		for _, term := range p.Query.Terms {
			one := trove.SearchQuery{Terms: []trove.SearchTerm{term}}
			inPath, inContent := len(one.Matches(m.Path)), len(one.Matches(*m.Content))
			if inPath+inContent == 0 {
				all = false
				break
			}
			n += 4*inPath + inContent
		}
		if !all {
			continue
		}
		score := float64(n) / float64(1+len(trove.SearchWords(*m.Content))/50)
		if a := p.After; a != nil && (score > a.Score || score == a.Score && m.ID <= a.ID) {
			continue
		}
		out = append(out, storage.MemorySearchHit{Memory: *memOut(m, true), Score: score})
	}
	slices.SortFunc(out, func(a, b storage.MemorySearchHit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.Memory.ID, b.Memory.ID)
	})
	return limitTo(out, p.Limit), nil
}

func (t *memTx) StoreHead(ctx context.Context, storeID string) (int64, []byte, error) {
	if _, ok := t.st.stores[storeID]; !ok {
		return 0, nil, notFound("memory store", storeID)
	}
	return t.st.seqs[storeID], t.st.heads[storeID], nil
}

func (t *memTx) VersionSeqAt(ctx context.Context, storeID string, at time.Time) (int64, error) {
	var seq int64
	for _, v := range t.st.versions {
		if v.StoreID == storeID && !v.CreatedAt.After(at) && v.Seq > seq {
			seq = v.Seq
		}
	}
	return seq, nil
}

func (t *memTx) VersionAsOf(ctx context.Context, p storage.VersionAsOfParams) ([]trove.MemoryVersion, error) {
	newest := map[string]trove.MemoryVersion{}
	for _, v := range t.st.versions {
		if v.StoreID != p.StoreID || v.Seq > p.Seq || (p.MemoryID != "" && v.MemoryID != p.MemoryID) {
			continue
		}
		if w, ok := newest[v.MemoryID]; !ok || v.Seq > w.Seq {
			newest[v.MemoryID] = v
		}
	}
	key := func(v trove.MemoryVersion) string {
		if v.Path == nil {
			return ""
		}
		return *v.Path
	}
	out := []trove.MemoryVersion{}
	for _, v := range newest {
		switch {
		case v.Operation == trove.OpDeleted,
			p.Path != "" && key(v) != p.Path,
			p.Prefix != "" && (v.Path == nil || !strings.HasPrefix(*v.Path, p.Prefix)),
			p.After != nil && cmp.Or(strings.Compare(key(v), p.After.Path), strings.Compare(v.MemoryID, p.After.MemoryID)) <= 0:
			continue
		}
		out = append(out, *verOut(v, p.WithContent))
	}
	slices.SortFunc(out, func(a, b trove.MemoryVersion) int {
		return cmp.Or(strings.Compare(key(a), key(b)), strings.Compare(a.MemoryID, b.MemoryID))
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return out, nil
}

func (t *memTx) MemoryInsertBatch(ctx context.Context, ms []*trove.Memory, vs []*trove.MemoryVersion) error {
	for i := range ms {
		if err := t.MemoryInsert(ctx, ms[i]); err != nil {
			return err
		}
		if err := t.VersionInsert(ctx, vs[i]); err != nil {
			return err
		}
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
