package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
)

// agentStore adds `--store NAME_OR_ID` (with --data/--database/--url/
// --workspace, as trove mcp has them) to a command that runs the memory
// tool, so its /memories is a memory store instead of a directory. Use:
//
//	var st agentStore
//	st.register(cmd)                       // in the command constructor
//	if st.enabled() {                      // in RunE, instead of --root
//		tool, closeStore, err := st.open(e.ctx, cmd, memtool.Options{})
//		...
//		defer closeStore()
//		runner.Tool = tool
//	}
type agentStore struct {
	sf  storeFlags
	ref string
}

// register adds the flags to cmd.
func (a *agentStore) register(cmd *cobra.Command) {
	a.sf.register(cmd)
	cmd.Flags().StringVar(&a.ref, "store", "", "memory store (name or memstore_ ID) that /memories maps to, instead of a directory")
}

// enabled reports whether --store was given.
func (a *agentStore) enabled() bool { return a.ref != "" }

// open resolves the store and returns the memory tool over it (conditional
// writes, edits re-applied after a lost race, store refusals shown to the
// model: all done by the engine over storefs), with the function that
// releases the database or connection. Every write is a version attributed to the local key in
// <data>/api_key, or to the remote credential (TROVE_API_KEY). It returns a
// clean error for an unknown, ambiguous or archived store.
func (a *agentStore) open(ctx context.Context, cmd *cobra.Command, opt memtool.Options) (*memtool.Tool, func() error, error) {
	k, err := openConn(ctx, cmd, &a.sf)
	if err != nil {
		return nil, nil, err
	}
	st, err := k.store(a.ref, writeStore)
	if err != nil {
		k.close()
		return nil, nil, err // Main renders it for people and names the target
	}
	fsys := storefs.New(k.svc, st.ID, storefs.Options{Principal: k.p})
	return memtool.New(fsys, opt), k.close, nil
}
