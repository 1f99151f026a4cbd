package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// conn is an open target (see targetRule): its services, the context that
// carries the principal writes are attributed to on a local database, and
// the target itself, for messages and for keying journals.
type conn struct {
	svc   trove.Services
	ctx   context.Context
	p     *trove.Principal // the local principal; nil on a server
	t     *target
	close func() error
}

// openConn is the one opener of client commands: it picks the target by
// targetRule and opens it, an httpapi.Client for a server, otherwise the
// local database. For a local database the principal is the key saved in
// <data>/api_key when there is one, else an actor-less principal in
// --workspace. The target is recorded in cmd's context, so that errors
// name it. The caller closes the connection.
func openConn(ctx context.Context, cmd *cobra.Command, sf *storeFlags) (*conn, error) {
	t, err := sf.resolve(cmd)
	if err != nil {
		return nil, err
	}
	sf.t = t
	setTarget(cmd, t)
	if t.remote() {
		return &conn{svc: httpapi.NewClient(t.url, t.key), ctx: ctx, t: t, close: func() error { return nil }}, nil
	}
	svc, closeDB, err := openLocal(ctx, t.data, t.dbURL, true)
	if err != nil {
		return nil, err
	}
	p := &trove.Principal{WorkspaceID: sf.workspace}
	if raw, err := os.ReadFile(filepath.Join(t.data, "api_key")); err == nil && !cmd.Flags().Changed("workspace") {
		if kp, err := svc.Authenticate(ctx, strings.TrimSpace(string(raw))); err == nil {
			p = kp
		}
	}
	return &conn{svc: svc, ctx: trove.WithPrincipal(ctx, p), p: p, t: t, close: closeDB}, nil
}

// withConn opens the target, runs f with it, and closes it.
func withConn(ctx context.Context, cmd *cobra.Command, sf *storeFlags, f func(k *conn) error) error {
	k, err := openConn(ctx, cmd, sf)
	if err != nil {
		return err
	}
	defer k.close()
	return f(k)
}

// withStore opens the target, resolves the store ref for use (see
// resolveStore), runs f with both, and closes the target.
func withStore(ctx context.Context, cmd *cobra.Command, sf *storeFlags, ref string, use storeUse, f func(k *conn, st *trove.Store) error) error {
	return withConn(ctx, cmd, sf, func(k *conn) error {
		st, err := k.store(ref, use)
		if err != nil {
			return err
		}
		return f(k, st)
	})
}

// storeUse is what a command does with the store it names.
type storeUse int

const (
	// readStore reads the store or changes the store itself (archive,
	// delete, update): archived stores are found too, the target has the
	// last word.
	readStore storeUse = iota
	// writeStore writes memories into it: an archived store is refused up
	// front.
	writeStore
)

// store resolves ref on k's target (see resolveStore).
func (k *conn) store(ref string, use storeUse) (*trove.Store, error) {
	return resolveStore(k.ctx, k.svc, ref, use)
}

// resolveStore is the one store resolver: ref is a store ID (memstore_…) or
// the exact name of a store, archived ones included. It returns ENOTFOUND
// (exit 3) for an unknown ID or name, EINVALID for a name several stores
// have, and, for writeStore, EINVALID for an archived store (a name an
// archived store shares with one live store is the live one).
func resolveStore(ctx context.Context, svc trove.Services, ref string, use storeUse) (*trove.Store, error) {
	var st *trove.Store
	var err error
	if strings.HasPrefix(ref, trove.PrefixStore) {
		st, err = svc.GetStore(ctx, ref)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			err = trove.Errorf(trove.ENOTFOUND, "no store with ID %s (see trove stores list)", ref)
		}
	} else {
		var all []trove.Store
		if all, err = listAllStores(ctx, svc, true); err == nil {
			if use == writeStore && hasLive(all, ref) {
				all = slices.DeleteFunc(all, func(s trove.Store) bool { return s.ArchivedAt != nil })
			}
			st, err = storeNamed(all, ref)
		}
	}
	if err != nil {
		return nil, err
	}
	if use == writeStore && st.ArchivedAt != nil {
		return nil, trove.Errorf(trove.EINVALID, "store %s (%q) is archived: its memories can be read but not written", st.ID, st.Name)
	}
	return st, nil
}

// hasLive reports whether a live store in all is named name.
func hasLive(all []trove.Store, name string) bool {
	return slices.ContainsFunc(all, func(s trove.Store) bool { return s.Name == name && s.ArchivedAt == nil })
}

// listAllStores lists every store of the workspace (with archived, the
// archived ones too), never nil.
func listAllStores(ctx context.Context, svc trove.Services, archived bool) ([]trove.Store, error) {
	return trove.AllItems(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Store], error) {
		return svc.ListStores(ctx, trove.ListStoresParams{Limit: 100, Cursor: cursor, IncludeArchived: archived})
	})
}

// storeNamed returns the one store of all named name: ENOTFOUND naming the
// stores there are when none is, EINVALID with their IDs when several are.
func storeNamed(all []trove.Store, name string) (*trove.Store, error) {
	var matches []trove.Store
	for _, s := range all {
		if s.Name == name {
			matches = append(matches, s)
		}
	}
	switch len(matches) {
	case 0:
		if len(all) == 0 {
			return nil, trove.Errorf(trove.ENOTFOUND, "no store named %q: the workspace has no stores yet (create one with trove stores create %s)", name, shellQuote(name))
		}
		names := make([]string, len(all))
		for i, s := range all {
			names[i] = strconv.Quote(s.Name)
		}
		return nil, trove.Errorf(trove.ENOTFOUND, "no store named %q; the stores are %s", name, strings.Join(names, ", "))
	case 1:
		return &matches[0], nil
	}
	ids := make([]string, len(matches))
	for i, s := range matches {
		ids[i] = s.ID
	}
	return nil, trove.Errorf(trove.EINVALID, "%d stores are named %q; pass one of their IDs: %s", len(matches), name, strings.Join(ids, ", "))
}

// sessions returns the session service of the target.
func (k *conn) sessions() (trove.SessionService, error) {
	ss, ok := k.svc.(trove.SessionService)
	if !ok {
		return nil, fmt.Errorf("this target has no sessions")
	}
	return ss, nil
}

// dreams returns the dream service of the target.
func (k *conn) dreams() (trove.DreamService, error) {
	ds, ok := k.svc.(trove.DreamService)
	if !ok {
		return nil, fmt.Errorf("this target has no dreams")
	}
	return ds, nil
}

// history returns the time machine of the target (trove.HistoryService).
func (k *conn) history() (trove.HistoryService, error) {
	h, ok := k.svc.(trove.HistoryService)
	if !ok {
		return nil, fmt.Errorf("this target has no store history (as-of reads, diffs, forks, rollbacks, audits)")
	}
	return h, nil
}
