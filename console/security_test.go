package console_test

import (
	"context"
	"testing"
)

func testHostile(t *testing.T, bctx context.Context)             { t.Skip("todo") }
func testCSRF(t *testing.T, bctx context.Context)                { t.Skip("todo") }
func testRevoked(t *testing.T, bctx context.Context)             { t.Skip("todo") }
func testTLS(t *testing.T, bctx context.Context)                 { t.Skip("todo") }
func screenshots(t *testing.T, bctx context.Context, dir string) {}
