package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trovehq/trove"
)

func TestTranslate(t *testing.T) {
	domain := trove.Errorf(trove.EPRECONDITION, "kept as is")
	other := errors.New("some bug")
	tests := []struct {
		name string
		err  error
		want string // trove code; "" for nil; "asis" for the error unchanged
	}{
		{"nil", nil, ""},
		{"domain error passes through", domain, trove.EPRECONDITION},
		{"no rows", pgx.ErrNoRows, trove.ENOTFOUND},
		{"wrapped no rows", fmt.Errorf("scan: %w", pgx.ErrNoRows), trove.ENOTFOUND},
		{"unique path", &pgconn.PgError{Code: "23505", ConstraintName: pathConstraint}, trove.EPATHCONFLICT},
		{"other unique", &pgconn.PgError{Code: "23505", ConstraintName: "stores_pkey"}, "asis"},
		{"NUL in text", &pgconn.PgError{Code: "22021"}, trove.EINVALID},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, trove.EUNAVAILABLE},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, trove.EUNAVAILABLE},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, trove.EUNAVAILABLE},
		{"connection exception", &pgconn.PgError{Code: "08006"}, trove.EUNAVAILABLE},
		{"too many connections", &pgconn.PgError{Code: "53300"}, trove.EUNAVAILABLE},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, trove.EUNAVAILABLE},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, trove.EUNAVAILABLE},
		{"deadlock", &pgconn.PgError{Code: "40P01"}, trove.EUNAVAILABLE},
		{"lock timeout", &pgconn.PgError{Code: "55P03"}, trove.EUNAVAILABLE},
		{"idle in transaction timeout", &pgconn.PgError{Code: "25P03"}, trove.EUNAVAILABLE},
		{"transaction timeout", &pgconn.PgError{Code: "25P04"}, trove.EUNAVAILABLE},
		{"idle session timeout", &pgconn.PgError{Code: "57P05"}, trove.EUNAVAILABLE},
		{"statement completion unknown", &pgconn.PgError{Code: "40003"}, trove.EUNAVAILABLE},
		{"out of memory", &pgconn.PgError{Code: "53200"}, trove.EUNAVAILABLE},
		{"disk full", &pgconn.PgError{Code: "53100"}, trove.EUNAVAILABLE},
		{"io error", &pgconn.PgError{Code: "58030"}, trove.EUNAVAILABLE},
		{"read-only transaction is a bug", &pgconn.PgError{Code: "25006"}, "asis"},
		{"syntax error is a bug", &pgconn.PgError{Code: "42601"}, "asis"},
		{"connect error", &pgconn.ConnectError{}, trove.EUNAVAILABLE},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, trove.EUNAVAILABLE},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), trove.EUNAVAILABLE},
		{"eof", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), trove.EUNAVAILABLE},
		{"deadline", context.DeadlineExceeded, trove.EUNAVAILABLE},
		{"cancelled", fmt.Errorf("query: %w", context.Canceled), trove.EUNAVAILABLE},
		{"conn closed", errors.New("conn closed"), trove.EUNAVAILABLE},
		{"closed pool", errors.New("closed pool"), trove.EUNAVAILABLE},
		{"unexpected", other, "asis"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := translate(tt.err)
			switch tt.want {
			case "":
				if got != nil {
					t.Fatalf("translate(nil) = %v", got)
				}
			case "asis":
				if got != tt.err {
					t.Fatalf("translate(%v) = %v, want it unchanged", tt.err, got)
				}
			default:
				if c := trove.ErrorCode(got); c != tt.want {
					t.Fatalf("translate(%v) code = %q, want %q", tt.err, c, tt.want)
				}
				if tt.err != domain && !errors.Is(got, tt.err) {
					t.Errorf("translate(%v) lost the cause: %v", tt.err, got)
				}
			}
		})
	}
}

func TestPrefixUpper(t *testing.T) {
	tests := []struct {
		prefix, want string
		ok           bool
	}{
		{"/a/", "/a0", true},
		{"/é", "/ê", true},
		{"/\U0010FFFF", "0", true},
		{"\U0010FFFF", "", false},
		{"/\uD7FF", "/\uE000", true},
		{"", "", false},
		{"/\xff", "", false},
	}
	for _, tt := range tests {
		got, ok := prefixUpper(tt.prefix)
		if got != tt.want || ok != tt.ok {
			t.Errorf("prefixUpper(%q) = %q, %v; want %q, %v", tt.prefix, got, ok, tt.want, tt.ok)
		}
	}
}

func TestAncestors(t *testing.T) {
	got := fmt.Sprint(ancestors("/a/b/c"))
	if got != "[/a /a/b]" {
		t.Fatalf("ancestors(/a/b/c) = %s", got)
	}
	if a := ancestors("/a"); len(a) != 0 {
		t.Fatalf("ancestors(/a) = %v", a)
	}
}
