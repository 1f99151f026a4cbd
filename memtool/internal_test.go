package memtool

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestFormatSize(t *testing.T) {
	tests := map[int64]string{
		-1: "0B", 0: "0B", 12: "12B", 1023: "1023B",
		1024: "1.0K", 1025: "1.0K", 1126: "1.1K", 1127: "1.1K", 1280: "1.3K", 1536: "1.5K",
		2047: "2.0K", 2048: "2.0K", 2304: "2.3K", DirSize: "4.0K", 5632: "5.5K", 18841: "18.4K",
		1048064: "1023.5K", 1048524: "1023.9K", 1048525: "1.0M", 1048575: "1.0M",
		1 << 20: "1.0M", 1258291: "1.2M", 1<<30 - 1: "1.0G",
		5<<30 + 1<<29: "5.5G", 1<<40 - 1: "1.0T", 1 << 40: "1.0T", 3<<40 + 1<<39: "3.5T",
		1 << 50: "1024.0T", math.MaxInt64: "8388608.0T",
	}
	for b, want := range tests {
		if got := formatSize(b); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	names := []string{"a", "\uFF5E", "9.txt", "B", "\U0001F600", "10.txt", "node_modules2"}
	slices.SortFunc(names, compareUTF16)
	want := []string{"10.txt", "9.txt", "B", "a", "node_modules2", "\U0001F600", "\uFF5E"}
	if !slices.Equal(names, want) {
		t.Errorf("order = %q, want %q", names, want)
	}
}

func TestDetectSecret(t *testing.T) {
	tests := map[string]string{
		"just notes about keys and tokens":        "",
		"sk-not-long":                             "",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE":   "a PEM private key",
		"-----BEGIN PRIVATE KEY-----":             "a PEM private key",
		"id AKIAIOSFODNN7EXAMPLE":                 "an AWS access key ID",
		"sk-ant-api03-" + strings.Repeat("x", 40): "an Anthropic API key",
		"sk-proj-" + strings.Repeat("A", 40):      "an OpenAI API key",
		"sk-" + strings.Repeat("a1", 20):          "an OpenAI API key",
		"ghp_" + strings.Repeat("a", 36):          "a GitHub token",
		"github_pat_" + strings.Repeat("a", 30):   "a GitHub token",
		"xoxb-123456789012-abcdef":                "a Slack token",
		"AIza" + strings.Repeat("b", 35):          "a Google API key",
	}
	for in, want := range tests {
		if got := DetectSecret(in); got != want {
			t.Errorf("DetectSecret(%.30q) = %q, want %q", in, got, want)
		}
	}
}

func TestLockTable(t *testing.T) {
	var lt lockTable
	ctx := context.Background()
	tryLock := func(exclusive bool, names ...string) bool {
		c, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		unlock, err := lt.lock(c, exclusive, names...)
		if err != nil {
			return false
		}
		unlock()
		return true
	}
	unlockDir, _ := lt.lock(ctx, true, "a")
	tests := []struct {
		exclusive bool
		names     []string
		want      bool
	}{
		{true, []string{"a/b"}, false}, // under the locked directory
		{false, []string{"a"}, false},  // same path, shared vs exclusive
		{false, []string{""}, false},   // the root covers everything
		{true, []string{"ab"}, true},   // a sibling sharing a prefix
		{true, []string{"b", "a/x"}, false},
	}
	for _, tc := range tests {
		if got := tryLock(tc.exclusive, tc.names...); got != tc.want {
			t.Errorf("lock(%v, %q) acquired = %v, want %v", tc.exclusive, tc.names, got, tc.want)
		}
	}
	unlockDir()
	r1, _ := lt.lock(ctx, false, "x")
	r2, _ := lt.lock(ctx, false, "x") // shared locks coexist
	if tryLock(true, "x") {
		t.Error("exclusive lock granted while shared locks are held")
	}
	r1()
	r2()
	if !tryLock(true, "x") {
		t.Error("exclusive lock refused after release")
	}
	if len(lt.held) != 0 || len(lt.waiting) != 0 {
		t.Errorf("table not empty: %d held, %d waiting", len(lt.held), len(lt.waiting))
	}
}
