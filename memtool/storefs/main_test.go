package storefs_test

import (
	"os"
	"testing"

	"github.com/trovehq/trove/internal/pgtest"
)

// TestMain stops the private PostgreSQL cluster, if the tests started one
// (pgtest.URL), when they end.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
