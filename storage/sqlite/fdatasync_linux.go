package sqlite

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync flushes f's data and the metadata needed to read it back (its
// size), as SQLite itself does on Linux.
func fdatasync(f *os.File) error {
	for {
		err := unix.Fdatasync(int(f.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
