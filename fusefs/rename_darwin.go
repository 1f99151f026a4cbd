package fusefs

import "golang.org/x/sys/unix"

// renameNoReplace is the rename flag asking not to replace an existing
// destination: macOS's renamex_np RENAME_EXCL, which macFUSE passes as is.
const renameNoReplace = unix.RENAME_EXCL
