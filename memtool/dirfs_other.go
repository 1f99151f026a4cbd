//go:build unix && !linux

package memtool

import (
	"time"

	"golang.org/x/sys/unix"
)

// setAtime sets the access time of base in the directory dfd to t, keeping
// the modification time (read first: UTIME_OMIT is not portable), without
// following a link.
func setAtime(dfd int, base string, t time.Time) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return mapErr(err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(t.UnixNano()), st.Mtim}
	return mapErr(unix.UtimesNanoAt(dfd, base, ts, unix.AT_SYMLINK_NOFOLLOW))
}

// openBeneath opens the directory rel ("." for the root) below rootfd
// without following any link (openBeneathWalk).
func openBeneath(rootfd int, rel string) (int, error) { return openBeneathWalk(rootfd, rel) }

// oNoatime is 0: O_NOATIME is Linux-only.
const oNoatime = 0
