package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/spf13/cobra"
)

// releaseVersion is set by release builds (internal/release) with
// -ldflags "-X github.com/trovehq/trove/cmd/trove/cli.releaseVersion=v1.2.3";
// it wins over the build info, which a build from a checkout lacks.
var releaseVersion string

// Version returns trove's version: releaseVersion when a release build set
// it, else from the build info: the module version
// when built by go install from a tagged module (v1.2.3, or a pseudo-version),
// else "devel", followed by "+<revision>" (12 hex digits, ".dirty" for
// uncommitted changes) when the build recorded the VCS state.
var Version = sync.OnceValue(func() string {
	if releaseVersion != "" {
		return releaseVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" && v == "devel" {
		v += "+" + rev[:min(12, len(rev))]
		if dirty {
			v += ".dirty"
		}
	}
	return v
})

func newVersionCmd(e *env) *cobra.Command {
	var out output
	cmd := &cobra.Command{
		Use:   "version [-o table|json]",
		Short: "Print trove's version (also trove --version)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(); err != nil {
				return err
			}
			if out.json() {
				return writeJSON(e.stdout, struct {
					Version string `json:"version"`
					Go      string `json:"go"`
					OS      string `json:"os"`
					Arch    string `json:"arch"`
				}{Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH})
			}
			fmt.Fprintf(e.stdout, "trove %s (%s %s/%s)\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
	out.register(cmd.Flags())
	return cmd
}
