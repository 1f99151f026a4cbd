//go:build !linux && !darwin

package sessionrun

import "runtime"

// FUSEAvailable returns why FUSE mounts cannot work on this machine: trove
// mounts with FUSE on Linux and macOS only.
func FUSEAvailable() string {
	return "trove has no FUSE mounts on " + runtime.GOOS
}
