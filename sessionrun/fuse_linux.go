package sessionrun

import (
	"os"
	"os/exec"
)

// FUSEAvailable returns why FUSE mounts cannot work on this machine, or ""
// when they can (/dev/fuse, and root or fusermount3 in PATH).
func FUSEAvailable() string {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return "no /dev/fuse"
	}
	if os.Getuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			return "not root and no fusermount3 in PATH"
		}
	}
	return ""
}
