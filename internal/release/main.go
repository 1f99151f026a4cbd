// Command release builds what a Trove release ships, from a checkout, with
// nothing but the Go toolchain (no container daemon, no downloads):
//
//   - trove for linux, darwin and windows on amd64 and arm64 (static,
//     CGO_ENABLED=0, -trimpath, the version stamped in), named
//     trove_<version>_<os>_<arch>[.exe];
//   - SHA256SUMS over them, in sha256sum's format;
//   - an SBOM (CycloneDX 1.5 JSON) of the modules linked into the binary;
//   - a container image for linux/amd64 and linux/arm64 as an OCI image
//     layout archive (trove_<version>_image.oci.tar): the static binary as
//     /trove on an empty base, a non-root user, /data as the volume, port
//     7007, `trove healthcheck` as the health check, OCI labels naming the
//     version and revision. Load it with `skopeo copy oci-archive:…` or
//     `podman load`, or push it with `crane push`.
//
// Run it from the repository root:
//
//	go run ./internal/release -version v1.2.3 -out dist
//
// It lives under internal/ and is never linked into trove.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var o options
	var targets, epoch string
	flag.StringVar(&o.Version, "version", "", "the version to stamp in (required), e.g. v1.2.3")
	flag.StringVar(&o.Revision, "revision", "", "the VCS revision for the image's labels (default: git rev-parse HEAD)")
	flag.StringVar(&o.Out, "out", "dist", "output directory (created; must be empty or absent)")
	flag.StringVar(&targets, "targets", strings.Join(defaultTargets, ","), "comma-separated os/arch list to build")
	flag.BoolVar(&o.Image, "image", true, "also build the container image (needs linux targets)")
	flag.StringVar(&epoch, "source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "Unix time recorded as the image's creation time (default: the revision's commit time)")
	flag.Parse()
	o.Targets = strings.Split(targets, ",")
	o.Trimpath = true
	if epoch != "" {
		n, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			fmt.Fprintf(os.Stderr, "release: -source-date-epoch %q is not a Unix time\n", epoch)
			os.Exit(2)
		}
		o.Created = time.Unix(n, 0).UTC()
	}
	if o.Version == "" {
		fmt.Fprintln(os.Stderr, "release: -version is required, e.g. -version v1.2.3")
		os.Exit(2)
	}
	if err := o.fillFromGit(); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	files, err := run(o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, f := range files {
		fmt.Println(f)
	}
}
