//go:build !linux

package sqlite

import "os"

// fdatasync flushes f to stable storage (File.Sync: fsync, or F_FULLFSYNC
// on macOS).
func fdatasync(f *os.File) error { return f.Sync() }
