package fusefs

import "golang.org/x/sys/unix"

// renameNoReplace is the rename flag asking not to replace an existing
// destination: Linux's RENAME_NOREPLACE.
const renameNoReplace = unix.RENAME_NOREPLACE
