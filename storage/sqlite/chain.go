package sqlite

import (
	"database/sql/driver"
	"fmt"

	"modernc.org/sqlite"

	"github.com/trovehq/trove"
)

// chainFunc is SQL's trove_chain(prev BLOB or NULL, seq INTEGER, leaf BLOB):
// trove.VersionChainHash, so VersionInsert advances a store's chain head in
// the statement that takes the version's number.
func chainFunc(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	var prev []byte
	if args[0] != nil {
		b, ok := args[0].([]byte)
		if !ok {
			return nil, fmt.Errorf("trove_chain: prev must be a blob, got %T", args[0])
		}
		prev = b
	}
	seq, ok := args[1].(int64)
	if !ok {
		return nil, fmt.Errorf("trove_chain: seq must be an integer, got %T", args[1])
	}
	leaf, ok := args[2].([]byte)
	if !ok {
		return nil, fmt.Errorf("trove_chain: leaf must be a blob, got %T", args[2])
	}
	return trove.VersionChainHash(prev, seq, leaf), nil
}
