//go:build !linux && !darwin

package fusefs

import (
	"fmt"

	"github.com/trovehq/trove/vfs"
)

// Server is a live mount. Mount never returns one on this operating system.
type Server struct{ dir string }

// Mount fails with ErrUnavailable: there is no FUSE here. Callers check
// first (sessionrun.FUSEAvailable) and offer the copy engine (trove sync)
// instead.
func Mount(dir string, v *vfs.FS, opts Options) (*Server, error) {
	return nil, fmt.Errorf("fusefs: mount %s: %w", dir, ErrUnavailable)
}

// Dir returns the mount point.
func (s *Server) Dir() string { return s.dir }

// Unmount fails with ErrUnavailable: nothing is ever mounted here.
func (s *Server) Unmount() error { return ErrUnavailable }
