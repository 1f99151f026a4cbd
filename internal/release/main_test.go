package main

import (
	"os"
	"testing"

	"github.com/trovehq/trove/internal/skipnote"
)

// TestMain reports, in one line, the long test -short left out.
func TestMain(m *testing.M) { os.Exit(skipnote.Main(m)) }
