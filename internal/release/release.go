package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// defaultTargets are the six platforms a release ships.
var defaultTargets = []string{
	"linux/amd64", "linux/arm64",
	"darwin/amd64", "darwin/arm64",
	"windows/amd64", "windows/arm64",
}

const (
	module      = "github.com/trovehq/trove"
	source      = "https://github.com/trovehq/trove"
	versionVar  = module + "/cmd/trove/cli.releaseVersion"
	imageUID    = 65532 // the conventional "nonroot" user of distroless images
	imagePort   = "7007/tcp"
	imageData   = "/data"
	imageBinary = "/trove"
)

// options says what run builds.
type options struct {
	Version  string    // stamped into the binaries and the image's labels
	Revision string    // VCS revision for the labels
	Created  time.Time // the image's creation time (reproducible builds)
	Out      string    // output directory, created; must be empty or absent
	Targets  []string  // os/arch
	Image    bool      // also build the image from the linux targets
	Trimpath bool      // -trimpath (release builds; tests skip it to reuse the build cache)
}

var versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$|^devel(\+[0-9a-f.]+)?$`)

// fillFromGit completes the revision and creation time from the checkout.
func (o *options) fillFromGit() error {
	if o.Revision == "" {
		out, err := exec.Command("git", "rev-parse", "HEAD").Output()
		if err != nil {
			return fmt.Errorf("git rev-parse HEAD: %v (give -revision)", err)
		}
		o.Revision = strings.TrimSpace(string(out))
	}
	if o.Created.IsZero() {
		out, err := exec.Command("git", "log", "-1", "--format=%ct", o.Revision).Output()
		if err != nil {
			return fmt.Errorf("git log %s: %v (give -source-date-epoch)", o.Revision, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			return fmt.Errorf("git log %s: commit time %q", o.Revision, out)
		}
		o.Created = time.Unix(n, 0).UTC()
	}
	return nil
}

// run builds everything options ask for into o.Out and returns the files
// it wrote, in order. Progress goes to log.
func run(o options, log io.Writer) ([]string, error) {
	if !versionRE.MatchString(o.Version) {
		return nil, fmt.Errorf("version %q is not a semantic version such as v1.2.3", o.Version)
	}
	for _, t := range o.Targets {
		if !slices.Contains(defaultTargets, t) {
			return nil, fmt.Errorf("target %q is not one of %s", t, strings.Join(defaultTargets, ", "))
		}
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(o.Out); err != nil {
		return nil, err
	} else if len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: give an empty or new -out directory", o.Out)
	}

	var files []string
	bins := map[string]string{} // target -> path
	for _, t := range o.Targets {
		goos, goarch, _ := strings.Cut(t, "/")
		name := fmt.Sprintf("trove_%s_%s_%s", o.Version, goos, goarch)
		if goos == "windows" {
			name += ".exe"
		}
		path := filepath.Join(o.Out, name)
		fmt.Fprintf(log, "build %s\n", t)
		if err := build(goos, goarch, o.Version, o.Trimpath, path); err != nil {
			return nil, err
		}
		bins[t] = path
		files = append(files, path)
	}

	sums := filepath.Join(o.Out, "SHA256SUMS")
	if err := writeSums(sums, files); err != nil {
		return nil, err
	}
	files = append(files, sums)

	sbom := filepath.Join(o.Out, fmt.Sprintf("trove_%s.cdx.json", o.Version))
	if err := writeSBOM(sbom, files[0], o.Version); err != nil {
		return nil, err
	}
	files = append(files, sbom)

	if o.Image {
		var plats []string
		for _, t := range o.Targets {
			if strings.HasPrefix(t, "linux/") {
				plats = append(plats, t)
			}
		}
		if len(plats) == 0 {
			return nil, errors.New("the image needs a linux target (or give -image=false)")
		}
		img := filepath.Join(o.Out, fmt.Sprintf("trove_%s_image.oci.tar", o.Version))
		fmt.Fprintf(log, "image %s\n", strings.Join(plats, ", "))
		if err := writeImage(img, plats, bins, o); err != nil {
			return nil, err
		}
		files = append(files, img)
	}
	return files, nil
}

// build compiles cmd/trove for one target, static and with the version in.
func build(goos, goarch, version string, trimpath bool, out string) error {
	args := []string{"build", "-o", out, "-ldflags", "-s -w -X " + versionVar + "=" + version}
	if trimpath {
		args = append(args, "-trimpath")
	}
	args = append(args, "./cmd/trove")
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s/%s: %v\n%s", goos, goarch, err, out)
	}
	return nil
}

// writeSums writes "<sha256>  <name>" lines, as sha256sum -c reads them.
func writeSums(path string, files []string) error {
	var b bytes.Buffer
	for _, f := range files {
		sum, err := fileSHA256(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.Base(f))
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// writeSBOM writes a CycloneDX SBOM of the modules a built binary links,
// read from the binary's own build info (what was linked, not what go.mod
// lists).
func writeSBOM(path, binary, version string) error {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("read build info of %s: %w", binary, err)
	}
	purl := func(mod, ver string) string { return "pkg:golang/" + mod + "@" + ver }
	root := cdx.Component{
		BOMRef:     purl(module, version),
		Type:       cdx.ComponentTypeApplication,
		Name:       module,
		Version:    version,
		PackageURL: purl(module, version),
	}
	var comps []cdx.Component
	var refs []string
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		c := cdx.Component{
			BOMRef:     purl(m.Path, m.Version),
			Type:       cdx.ComponentTypeLibrary,
			Name:       m.Path,
			Version:    m.Version,
			PackageURL: purl(m.Path, m.Version),
		}
		if alg, sum, ok := strings.Cut(m.Sum, ":"); ok && alg == "h1" {
			// go.sum's h1 hash is a SHA-256 over the module's file list.
			if raw, err := base64.StdEncoding.DecodeString(sum); err == nil {
				c.Hashes = &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(raw)}}
			}
		}
		comps = append(comps, c)
		refs = append(refs, c.BOMRef)
	}
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{
		Component: &root,
		Properties: &[]cdx.Property{
			{Name: "go.version", Value: bi.GoVersion},
		},
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: root.BOMRef, Dependencies: &refs}}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON).SetPretty(true)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_5); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// imageConfig is the runtime configuration every platform's image shares.
func imageConfig(o options) v1.Config {
	return v1.Config{
		User:       fmt.Sprintf("%d:%d", imageUID, imageUID),
		Entrypoint: []string{imageBinary},
		Cmd:        []string{"serve"},
		WorkingDir: imageData,
		Env: []string{
			"TROVE_DATA=" + imageData,
			"TROVE_ADDR=0.0.0.0:7007",
			"HOME=" + imageData,
		},
		ExposedPorts: map[string]struct{}{imagePort: {}},
		Volumes:      map[string]struct{}{imageData: {}},
		Healthcheck: &v1.HealthConfig{
			Test:        []string{"CMD", imageBinary, "healthcheck"},
			Interval:    30 * time.Second,
			Timeout:     5 * time.Second,
			StartPeriod: 10 * time.Second,
			Retries:     3,
		},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "trove",
			"org.opencontainers.image.description": "Self-hosted memory for AI agents: memory stores API, memory tool, sessions",
			"org.opencontainers.image.version":     o.Version,
			"org.opencontainers.image.revision":    o.Revision,
			"org.opencontainers.image.source":      source,
			"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
		},
	}
}

// writeImage builds one image per linux platform (the binary on an empty
// base) and writes them as one multi-platform OCI image layout archive.
func writeImage(path string, plats []string, bins map[string]string, o options) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range plats {
		_, arch, _ := strings.Cut(p, "/")
		layerTar, err := rootfs(bins[p], o.Created)
		if err != nil {
			return err
		}
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(layerTar)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return err
		}
		img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   layer,
			History: v1.History{Created: v1.Time{Time: o.Created}, CreatedBy: "internal/release: trove " + o.Version, Comment: "static trove binary"},
		})
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		cf.Created = v1.Time{Time: o.Created}
		cf.Config = imageConfig(o)
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: "linux", Architecture: arch},
				Annotations: map[string]string{
					"org.opencontainers.image.version": o.Version,
				},
			},
		})
	}
	dir, err := os.MkdirTemp("", "trove-image-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("write OCI layout: %w", err)
	}
	return tarDir(path, dir, o.Created)
}

// rootfs is the image's only layer: /trove, /data owned by the non-root
// user, /tmp, and /etc/passwd and /etc/group naming that user.
func rootfs(binary string, mtime time.Time) ([]byte, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, mode int64, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\ntrove:x:%d:%d:trove:%s:/sbin/nologin\n", imageUID, imageUID, imageData)
	group := fmt.Sprintf("root:x:0:\ntrove:x:%d:\n", imageUID)
	steps := []func() error{
		func() error { return dir("etc", 0o755, 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("tmp", 0o1777, 0) },
		func() error { return dir(strings.TrimPrefix(imageData, "/"), 0o700, imageUID) },
		func() error { return file(strings.TrimPrefix(imageBinary, "/"), 0o755, bin) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir archives an OCI layout directory (an "oci-archive").
func tarDir(path, dir string, mtime time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel + "/", Mode: 0o755, ModTime: mtime})
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o644, Size: int64(len(b)), ModTime: mtime}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
