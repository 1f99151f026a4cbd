package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// TestLongRelease builds a release for the machine's own linux target (the
// others differ only in GOOS/GOARCH, which .ci/run's type check of every
// package for each of them covers: internal/crosscheck)
// and checks what a user and a registry would: the checksums verify, the
// SBOM names the linked modules, and the image's config is as documented and
// its binary runs `trove version` printing the release's version.
func TestLongRelease(t *testing.T) {
	skipnote.Long(t)
	if runtime.GOOS != "linux" || (runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64") {
		t.Skipf("runs the image's linux binary: needs linux/amd64 or linux/arm64, not %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	out := t.TempDir()
	target := "linux/" + runtime.GOARCH
	created := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	o := options{
		Version:  "v0.9.1-test",
		Revision: "0123456789abcdef0123456789abcdef01234567",
		Created:  created,
		Out:      out,
		Targets:  []string{target},
		Image:    true,
		Trimpath: false, // reuse the build cache; releases build with -trimpath
	}
	var log bytes.Buffer
	files, err := run(o, &log)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log.String())
	}
	bin := filepath.Join(out, "trove_v0.9.1-test_linux_"+runtime.GOARCH)
	want := []string{bin, filepath.Join(out, "SHA256SUMS"), filepath.Join(out, "trove_v0.9.1-test.cdx.json"), filepath.Join(out, "trove_v0.9.1-test_image.oci.tar")}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}

	t.Run("checksums", func(t *testing.T) {
		if _, err := exec.LookPath("sha256sum"); err != nil {
			t.Skip("sha256sum not installed")
		}
		cmd := exec.Command("sha256sum", "-c", "SHA256SUMS")
		cmd.Dir = out
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("sha256sum -c: %v\n%s", err, b)
		}
	})

	t.Run("sbom", func(t *testing.T) {
		f, err := os.Open(filepath.Join(out, "trove_v0.9.1-test.cdx.json"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var bom cdx.BOM
		if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
			t.Fatal(err)
		}
		if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Version != "v0.9.1-test" {
			t.Fatalf("metadata component: %+v", bom.Metadata)
		}
		var names []string
		for _, c := range *bom.Components {
			names = append(names, c.Name)
		}
		for _, mod := range []string{"modernc.org/sqlite", "github.com/jackc/pgx/v5", "github.com/anthropics/anthropic-sdk-go/v2"} {
			if !slices.Contains(names, mod) {
				t.Errorf("SBOM lacks %s (has %d components)", mod, len(names))
			}
		}
		// Benchmark and release code is never linked into trove.
		for _, mod := range []string{"github.com/google/go-containerregistry", "github.com/CycloneDX/cyclonedx-go"} {
			if slices.Contains(names, mod) {
				t.Errorf("trove links %s", mod)
			}
		}
	})

	t.Run("image", func(t *testing.T) {
		dir := t.TempDir()
		untar(t, filepath.Join(out, "trove_v0.9.1-test_image.oci.tar"), dir)
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.Architecture != runtime.GOARCH {
			t.Fatalf("index manifests: %+v", im.Manifests)
		}
		img, err := idx.Image(im.Manifests[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || !cf.Created.Time.Equal(created) {
			t.Errorf("platform/created: %s/%s %v", cf.OS, cf.Architecture, cf.Created)
		}
		if c.User != "65532:65532" {
			t.Errorf("user %q: want the non-root 65532:65532", c.User)
		}
		if diff := cmp.Diff([]string{"/trove"}, c.Entrypoint); diff != "" {
			t.Errorf("entrypoint: %s", diff)
		}
		if _, ok := c.ExposedPorts["7007/tcp"]; !ok {
			t.Errorf("exposed ports %v lack 7007/tcp", c.ExposedPorts)
		}
		if _, ok := c.Volumes["/data"]; !ok {
			t.Errorf("volumes %v lack /data", c.Volumes)
		}
		if c.Healthcheck == nil || !slices.Equal(c.Healthcheck.Test, []string{"CMD", "/trove", "healthcheck"}) {
			t.Errorf("healthcheck %+v", c.Healthcheck)
		}
		for k, v := range map[string]string{
			"org.opencontainers.image.version":  "v0.9.1-test",
			"org.opencontainers.image.revision": o.Revision,
			"org.opencontainers.image.created":  "2026-12-01T12:00:00Z",
		} {
			if c.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
			}
		}
		if !slices.Contains(c.Env, "TROVE_DATA=/data") || !slices.Contains(c.Env, "TROVE_ADDR=0.0.0.0:7007") {
			t.Errorf("env %v", c.Env)
		}

		// The one layer: /trove executable, /data owned by the user.
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("layers: %d, %v", len(layers), err)
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		extracted := filepath.Join(t.TempDir(), "trove")
		seen := map[string]*tar.Header{}
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			seen[h.Name] = h
			if h.Name == "trove" {
				b, err := io.ReadAll(tr)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(extracted, b, 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}
		if h := seen["data/"]; h == nil || h.Uid != 65532 || h.Mode&0o777 != 0o700 {
			t.Errorf("/data: %+v", h)
		}
		if h := seen["trove"]; h == nil || h.Mode&0o111 == 0 {
			t.Fatalf("/trove: %+v", h)
		}
		b, err := exec.Command(extracted, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("trove version from the image: %v\n%s", err, b)
		}
		if !strings.HasPrefix(string(b), "trove v0.9.1-test (") {
			t.Errorf("trove version printed %q", b)
		}
		// The health check command is there and fails clearly with no server.
		b, err = exec.Command(extracted, "healthcheck", "--url", "http://127.0.0.1:1", "--timeout", "2s").CombinedOutput()
		if err == nil || !strings.Contains(string(b), "unhealthy") {
			t.Errorf("healthcheck with no server: err %v, output %q", err, b)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		for name, o := range map[string]options{
			"bad version":   {Version: "1.x", Out: t.TempDir(), Targets: []string{target}},
			"bad target":    {Version: "v1.0.0", Out: t.TempDir(), Targets: []string{"plan9/386"}},
			"dir not empty": {Version: "v1.0.0", Out: out, Targets: []string{target}},
		} {
			if _, err := run(o, io.Discard); err == nil {
				t.Errorf("%s: run succeeded", name)
			}
		}
	})
}

func untar(t *testing.T, archive, dir string) {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The image config marshals the way registries read it.
func TestImageConfigJSON(t *testing.T) {
	c := imageConfig(options{Version: "v1.0.0", Revision: "abc", Created: time.Unix(0, 0).UTC()})
	b, err := json.Marshal(v1.ConfigFile{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"User":"65532:65532"`, `"Healthcheck":{"Test":["CMD","/trove","healthcheck"]`, `"7007/tcp":{}`, `"/data":{}`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("config JSON lacks %s: %s", s, b)
		}
	}
}
