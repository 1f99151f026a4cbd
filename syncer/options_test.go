package syncer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/syncer"
)

func TestNewRejectsBadOptions(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.root, "d")
	tests := []struct {
		name string
		o    syncer.Options
		msg  string
	}{
		{"missing services", syncer.Options{StoreID: e.storeID, Dir: dir, StateDir: dir + ".s"}, "required"},
		{"state inside dir", syncer.Options{Services: e.svc, StoreID: e.storeID, Dir: dir, StateDir: filepath.Join(dir, "s")}, "must be outside"},
		{"state is dir", syncer.Options{Services: e.svc, StoreID: e.storeID, Dir: dir, StateDir: dir}, "must be outside"},
		{"dir inside state", syncer.Options{Services: e.svc, StoreID: e.storeID, Dir: filepath.Join(dir, "x"), StateDir: dir}, "must not be inside"},
	}
	for _, tc := range tests {
		_, err := syncer.New(tc.o)
		if trove.ErrorCode(err) != trove.EINVALID || !strings.Contains(trove.ErrorMessage(err), tc.msg) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A state directory serves one store and one directory.
	en := e.engine("d", nil)
	en.Close()
	_, err := syncer.New(syncer.Options{Services: e.svc, StoreID: "memstore_other", Dir: dir, StateDir: filepath.Join(e.root, "d.state")})
	if trove.ErrorCode(err) != trove.EINVALID || !strings.Contains(trove.ErrorMessage(err), "belongs to store") {
		t.Errorf("reused state dir: %v", err)
	}
}
