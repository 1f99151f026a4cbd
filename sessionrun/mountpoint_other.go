//go:build !unix

package sessionrun

// isMountPoint is false where FUSE mounts do not exist.
func isMountPoint(string) bool { return false }
