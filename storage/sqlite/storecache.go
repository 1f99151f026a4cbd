package sqlite

import (
	"strings"

	"github.com/trovehq/trove"
)

// storeCache remembers, for the committer, the stores StoreLock read in the
// current group commit, so that the Writes of one group that touch the
// same store read its row once. While the group's transaction holds
// SQLite's only write lock nothing but this transaction can change a store,
// so a remembered row stays true until this transaction changes it or rolls
// back. The cache owns its invalidation:
//
//   - reset, by the committer, when a group begins (between groups another
//     process may have changed a store) and whenever a Write's fn fails
//     (its changes, or the group's, are rolled back);
//   - statement, by tx.exec, for every statement a Write executes: one
//     that names the stores table drops everything remembered.
//
// So no Tx method has to remember to invalidate it. A nil *storeCache (in
// Reads) remembers nothing.
type storeCache struct {
	m map[string]trove.Store
}

func newStoreCache() *storeCache { return &storeCache{m: map[string]trove.Store{}} }

// get returns a copy of the remembered store id, if any.
func (c *storeCache) get(id string) (*trove.Store, bool) {
	if c == nil {
		return nil, false
	}
	st, ok := c.m[id]
	if !ok {
		return nil, false
	}
	return st.Clone(), true
}

// put remembers a copy of st.
func (c *storeCache) put(st *trove.Store) {
	if c != nil {
		c.m[st.ID] = *st.Clone()
	}
}

// reset forgets every remembered store.
func (c *storeCache) reset() {
	if c != nil {
		clear(c.m)
	}
}

// statement is told of every statement a Write executes and forgets every
// remembered store when query may change the stores table. The test is
// conservative: a statement naming another table that contains "stores"
// (session_stores) only costs a re-read.
func (c *storeCache) statement(query string) {
	if c != nil && len(c.m) > 0 && strings.Contains(query, "stores") {
		clear(c.m)
	}
}
