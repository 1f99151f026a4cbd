package trove_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/trovehq/trove"
)

// pagedStores is a StoreService listing fixed stores two per page.
type pagedStores struct {
	trove.StoreService
	stores []trove.Store
}

func (p pagedStores) ListStores(_ context.Context, q trove.ListStoresParams) (*trove.Page[trove.Store], error) {
	i := 0
	if q.Cursor != "" {
		i, _ = strconv.Atoi(q.Cursor)
	}
	end := min(i+2, len(p.stores))
	out := &trove.Page[trove.Store]{Data: p.stores[i:end]}
	if end < len(p.stores) {
		out.NextPage = strconv.Itoa(end)
	}
	return out, nil
}

func TestCheckStoreNameFree(t *testing.T) {
	t.Parallel()
	archived := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := pagedStores{stores: []trove.Store{
		{ID: "memstore_1", Name: "a"},
		{ID: "memstore_2", Name: "old", ArchivedAt: &archived},
		{ID: "memstore_3", Name: "b"},
		{ID: "memstore_4", Name: "c"},
		{ID: "memstore_5", Name: "B"},
	}}
	for _, c := range []struct {
		name, store string
		wantID      string
	}{
		{"on the first page", "a", "memstore_1"},
		{"on the last page", "B", "memstore_5"},
		{"names are case-sensitive", "A", ""},
		{"archived stores do not count", "old", ""},
		{"absent", "zzz", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			st, err := trove.LiveStoreNamed(context.Background(), svc, c.store)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if st != nil {
				got = st.ID
			}
			if got != c.wantID {
				t.Errorf("LiveStoreNamed(%q) = %q, want %q", c.store, got, c.wantID)
			}
			err = trove.CheckStoreNameFree(context.Background(), svc, c.store)
			if want := map[bool]string{true: trove.ECONFLICT, false: ""}[c.wantID != ""]; trove.ErrorCode(err) != want || trove.IsStoreNameTaken(err) != (want != "") {
				t.Errorf("CheckStoreNameFree(%q) = %v, want code %q", c.store, err, want)
			}
		})
	}
}
