// Package deploy holds what runs Trove outside a checkout: the systemd unit
// (systemd/), the Helm chart (helm/trove) and, built by internal/release,
// the container image. Its tests check the unit with systemd's own analyzer
// and the chart with helm (lint, and what it renders in each mode).
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnit runs systemd-analyze over the unit as shipped (with
// ExecStart pointed at an executable that exists here): verify must pass and
// the sandboxing score (security --offline) must stay at or under 2.0 ("--threshold=20" in tenths), "OK".
func TestSystemdUnit(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed (apt-get install systemd): the unit is not checked")
	}
	unit, err := os.ReadFile(filepath.Join("systemd", "trove.service"))
	if err != nil {
		t.Fatal(err)
	}
	const shipped = "ExecStart=/usr/local/bin/trove serve"
	if !strings.Contains(string(unit), shipped) {
		t.Fatalf("the unit no longer says %q", shipped)
	}
	exe, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "trove.service")
	if err := os.WriteFile(path, []byte(strings.Replace(string(unit), shipped, "ExecStart="+exe+" serve", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sa, "verify", path).CombinedOutput(); err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err := exec.Command(sa, "security", "--offline=yes", "--threshold=20", "--no-pager", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: exposure over 2.0 (%v)\n%s", err, out)
	}
	if !strings.Contains(string(out), "Overall exposure level for trove.service") {
		t.Fatalf("systemd-analyze security printed no score:\n%s", out)
	}
}
