package syncer_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"

	"github.com/trovehq/trove"
)

// preconds wraps the services the engine writes through and records the
// precondition of every successful update (by the version it made) and
// delete (by memory id), so a version history can show which base each of
// the engine's writes was conditional on.
type preconds struct {
	trove.Services
	mu      sync.Mutex
	update  map[string]string // version id → PreconditionSHA256
	deleted map[string]string // memory id → precondition of its delete
}

func newPreconds(s trove.Services) *preconds {
	return &preconds{Services: s, update: map[string]string{}, deleted: map[string]string{}}
}

func (p *preconds) UpdateMemory(ctx context.Context, s, id string, u trove.UpdateMemoryParams) (*trove.Memory, error) {
	m, err := p.Services.UpdateMemory(ctx, s, id, u)
	if err == nil {
		p.mu.Lock()
		p.update[m.VersionID] = u.PreconditionSHA256
		p.mu.Unlock()
	}
	return m, err
}

func (p *preconds) DeleteMemory(ctx context.Context, s, id, sha string) error {
	err := p.Services.DeleteMemory(ctx, s, id, sha)
	if err == nil {
		p.mu.Lock()
		p.deleted[id] = sha
		p.mu.Unlock()
	}
	return err
}

// sessionCtx creates a session on the env's store with the given access and
// returns a context carrying the session credential's principal, so that
// writes made with it are versions by a session_actor, told apart from the
// test's own writes (api_actor).
func (e *env) sessionCtx(access trove.Access) (context.Context, string) {
	e.t.Helper()
	sess, token, err := e.svc.CreateSession(e.ctx, trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: e.storeID, Access: access}}})
	if err != nil {
		e.t.Fatal(err)
	}
	p, err := e.svc.Authenticate(context.Background(), token)
	if err != nil {
		e.t.Fatal(err)
	}
	return trove.WithPrincipal(context.Background(), p), sess.ID
}

// history returns the version history of every memory the store ever held,
// derived from the store's version list, one line per version, oldest
// first:
//
//	created /a.md "A\n" by api_actor
//	modified /b.md "A2\n" by session_actor if "A\n"
//	deleted /b.md by session_actor if "A2\n"
//
// The key is the path the memory was created at (suffixed "#2", "#3"… for
// later memories created at the same path), so the lines under one key are
// one memory id: a rename shows as a "modified" line with the new path.
// "if X" is the precondition the engine's update or delete carried (as the
// content whose hash it was; "if none" when it had none); writes not made
// through rec carry no such suffix. A session actor other than sessionID
// shows as "session_actor(sesn_…)". keys maps each memory id to its key.
func (e *env) history(t *testing.T, rec *preconds, sessionID string) (hist map[string][]string, keys map[string]string) {
	t.Helper()
	var all []trove.MemoryVersion
	cursor := ""
	for {
		pg, err := e.svc.ListVersions(e.ctx, e.storeID, trove.ListVersionsParams{Limit: 20, View: trove.ViewFull, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, pg.Data...)
		if pg.NextPage == "" {
			break
		}
		cursor = pg.NextPage
	}
	// Version ids are monotonic: id order is write order.
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	bySHA := map[string]string{}
	for _, v := range all {
		if v.SHA256 != nil && v.Content != nil {
			bySHA[*v.SHA256] = *v.Content
		}
	}
	base := func(sha string) string {
		if sha == "" {
			return "none"
		}
		if c, ok := bySHA[sha]; ok {
			return strconv.Quote(c)
		}
		return "sha256:" + sha[:min(12, len(sha))]
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := map[string][]string{}
	keyOf := map[string]string{} // memory id → key
	for _, v := range all {
		p := "<redacted>"
		if v.Path != nil {
			p = *v.Path
		}
		k, ok := keyOf[v.MemoryID]
		if !ok {
			k = p
			for i := 2; out[k] != nil; i++ {
				k = p + "#" + strconv.Itoa(i)
			}
			keyOf[v.MemoryID] = k
		}
		line := string(v.Operation) + " " + p
		if v.Content != nil {
			line += " " + strconv.Quote(*v.Content)
		}
		by := "<nobody>"
		if a := v.CreatedBy; a != nil {
			by = string(a.Type)
			if a.Type == trove.ActorSession && a.SessionID != sessionID {
				by = fmt.Sprintf("%s(%s)", a.Type, a.SessionID)
			}
		}
		line += " by " + by
		if pre, ok := rec.update[v.ID]; ok {
			line += " if " + base(pre)
		} else if pre, ok := rec.deleted[v.MemoryID]; ok && v.Operation == trove.OpDeleted {
			line += " if " + base(pre)
		}
		out[k] = append(out[k], line)
	}
	return out, keyOf
}
