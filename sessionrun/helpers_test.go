package sessionrun_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/sessionrun"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

const workspace = "wrkspc_test"

// workspaceCtx carries the actor-less principal of the test workspace.
func workspaceCtx() context.Context {
	return trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: workspace})
}

// openCore opens a real core over a fresh SQLite database, closed when the
// test ends.
func openCore(t *testing.T) *core.Service {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t),
		sqlite.Options{AutoMigrate: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return core.New(db, core.Options{})
}

// fixture is a database with stores and a session attached to them.
type fixture struct {
	svc     *core.Service
	ids     map[string]string // store IDs by name
	sess    *trove.Session
	token   string
	p       *trove.Principal // the session's
	stderr  *lockedBuffer
	stdout  *lockedBuffer
	root    string
	state   string
	endings int // calls of End
}

// newFixture creates the stores (name → path → content) and a session with
// attach[i] naming the stores by name (":ro" suffix for read-only).
func newFixture(t *testing.T, stores map[string]map[string]string, attach ...string) *fixture {
	t.Helper()
	f := &fixture{svc: openCore(t), ids: map[string]string{}, stderr: &lockedBuffer{}, stdout: &lockedBuffer{}}
	ctx := workspaceCtx()
	for name, mems := range stores {
		st, err := f.svc.CreateStore(ctx, trove.CreateStoreParams{Name: name, Description: "about " + name})
		if err != nil {
			t.Fatal(err)
		}
		f.ids[name] = st.ID
		for p, c := range mems {
			if _, err := f.svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: p, Content: c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var params []trove.AttachStoreParams
	for _, a := range attach {
		access := trove.AccessReadWrite
		if n := len(a); n > 3 && a[n-3:] == ":ro" {
			a, access = a[:n-3], trove.AccessReadOnly
		}
		params = append(params, trove.AttachStoreParams{StoreID: f.ids[a], Access: access})
	}
	var err error
	if f.sess, f.token, err = f.svc.CreateSession(ctx, trove.CreateSessionParams{Stores: params}); err != nil {
		t.Fatal(err)
	}
	if f.p, err = f.svc.Authenticate(context.Background(), f.token); err != nil {
		t.Fatal(err)
	}
	f.root = filepath.Join(t.TempDir(), "mem")
	f.state = filepath.Join(t.TempDir(), "state")
	return f
}

// config is a run of script (sh -c) in the fixture's session with mnt.
func (f *fixture) config(mnt sessionrun.Mounter, script string) sessionrun.Config {
	return sessionrun.Config{
		Session: f.sess, Token: f.token, Services: f.svc, Principal: f.p,
		End: func(ctx context.Context) error {
			f.endings++
			_, err := f.svc.EndSession(trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: workspace}), f.sess.ID)
			return err
		},
		Mounter: mnt, Root: f.root, StateDir: f.state,
		Command: []string{"sh", "-c", script},
		Environ: append(os.Environ(), "TROVE_API_KEY=trove_sk_workspace_key_must_not_leak"),
		Stdout:  f.stdout, Stderr: f.stderr,
	}
}

// checkEnded checks that End was called once and the session ended.
func (f *fixture) checkEnded(t *testing.T) {
	t.Helper()
	if f.endings != 1 {
		t.Errorf("End called %d times, want 1", f.endings)
	}
	s, err := f.svc.GetSession(workspaceCtx(), f.sess.ID)
	if err != nil || s.EndedAt == nil {
		t.Errorf("session not ended: %+v %v", s, err)
	}
}

// contents reads a store back: the content by path, and by path the
// actors of its versions that were this session (sessionVersions) or
// anything else (otherVersions).
func (f *fixture) contents(t *testing.T, store string) (content map[string]string, sessionVersions, otherVersions map[string]int) {
	t.Helper()
	ctx := workspaceCtx()
	pg, err := f.svc.ListMemories(ctx, f.ids[store], trove.ListMemoriesParams{Limit: 100, View: trove.ViewFull})
	if err != nil {
		t.Fatal(err)
	}
	content, sessionVersions, otherVersions = map[string]string{}, map[string]int{}, map[string]int{}
	for _, it := range pg.Data {
		content[it.Memory.Path] = *it.Memory.Content
		vs, err := f.svc.ListVersions(ctx, f.ids[store], trove.ListVersionsParams{MemoryID: it.Memory.ID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs.Data {
			if v.CreatedBy != nil && v.CreatedBy.Type == trove.ActorSession && v.CreatedBy.SessionID == f.sess.ID {
				sessionVersions[it.Memory.Path]++
			} else {
				otherVersions[it.Memory.Path]++
			}
		}
	}
	return content, sessionVersions, otherVersions
}

func gone(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
}

func there(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the child process and us.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
