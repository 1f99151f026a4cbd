package deploy

import (
	"os"
	"testing"

	"github.com/trovehq/trove/internal/skipnote"
)

// TestMain says, without -v, which tests skipped for want of a tool on this
// machine (helm) and how to get it (skipnote).
func TestMain(m *testing.M) { os.Exit(skipnote.Main(m)) }
