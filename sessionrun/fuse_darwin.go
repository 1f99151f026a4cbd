package sessionrun

import "os"

// macFUSEMounters are the mount helpers go-fuse runs on macOS, one of which
// a macFUSE (or older OSXFUSE) installation provides.
var macFUSEMounters = []string{
	"/Library/Filesystems/macfuse.fs/Contents/Resources/mount_macfuse",
	"/Library/Filesystems/osxfuse.fs/Contents/Resources/mount_osxfuse",
}

// FUSEAvailable returns why FUSE mounts cannot work on this machine, or ""
// when they can (macFUSE installed).
func FUSEAvailable() string {
	for _, p := range macFUSEMounters {
		if _, err := os.Stat(p); err == nil {
			return ""
		}
	}
	return "macFUSE is not installed (https://macfuse.github.io)"
}
