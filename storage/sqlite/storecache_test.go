package sqlite

import (
	"testing"

	"github.com/trovehq/trove"
)

// The store cache forgets everything at any statement naming the stores
// table (the Store* writes, whatever their form) and at reset, keeps what
// it holds across statements on other tables, hands out copies, and a nil
// cache (a Read's) remembers nothing.
func TestStoreCacheInvalidation(t *testing.T) {
	t.Parallel()
	st := &trove.Store{ID: "memstore_1", WorkspaceID: "wrkspc_t", Name: "s", Metadata: map[string]string{"k": "v"}}
	for _, tc := range []struct {
		query string
		keeps bool
	}{
		{`INSERT INTO memories (id) VALUES (?)`, true},
		{`UPDATE memories SET path = ? WHERE id = ?`, true},
		{`INSERT INTO versions (id) VALUES (?)`, true},
		{`DELETE FROM versions WHERE store_id = ?`, true},
		{`INSERT INTO stores (id) VALUES (?)`, false},
		{`UPDATE stores SET name = ? WHERE id = ?`, false},
		{`DELETE FROM stores WHERE id = ?`, false},
		{`INSERT INTO session_stores (session_id) VALUES (?)`, false}, // conservative
	} {
		c := newStoreCache()
		c.put(st)
		c.statement(tc.query)
		if _, ok := c.get(st.ID); ok != tc.keeps {
			t.Errorf("after %q: remembered %v, want %v", tc.query, ok, tc.keeps)
		}
	}
	c := newStoreCache()
	c.put(st)
	got, ok := c.get(st.ID)
	if !ok {
		t.Fatal("a stored row is not remembered")
	}
	got.Metadata["k"] = "changed by the caller"
	got.Name = "changed"
	if again, _ := c.get(st.ID); again.Name != "s" || again.Metadata["k"] != "v" {
		t.Errorf("the cache handed out its own row: %+v", again)
	}
	c.reset()
	if _, ok := c.get(st.ID); ok {
		t.Error("reset kept a row")
	}
	var none *storeCache
	none.put(st)
	none.statement(`UPDATE stores SET name = ?`)
	none.reset()
	if _, ok := none.get(st.ID); ok {
		t.Error("a nil cache remembered a row")
	}
}
