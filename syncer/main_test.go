package syncer_test

import (
	"os"
	"testing"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/trovehq/trove/cmd/trove/cli"
	"github.com/trovehq/trove/internal/racechild"
)

// asTroveEnv, set to 1 in the environment of this test binary, makes it the
// trove command (cmd/trove's main) instead of the tests: the kill tests run
// `trove sync` as a real process without building it (buildTrove).
const asTroveEnv = "TROVE_TEST_AS_TROVE"

func TestMain(m *testing.M) {
	if os.Getenv(asTroveEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	racechild.Setenv()
	code := skipnote.Main(m)
	removeTroveBinary()
	os.Exit(code)
}
