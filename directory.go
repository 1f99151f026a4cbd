package trove

import "context"

// DirectoryService is a Trove extension (not part of the hosted API): it
// renames or deletes a directory — every live memory whose path lies below a
// directory path — in one transaction. Either every memory below the
// directory changes, with one version each attributed to the caller, or none
// does. Served at /trove/v1/memory_stores/{id}/directories/… (docs/API.md).
//
// A client of a server that lacks these endpoints gets an error for which
// errors.Is(err, errors.ErrUnsupported) holds; callers then fall back to one
// memory at a time.
type DirectoryService interface {
	// RenameDirectory moves every live memory below p.From to the same
	// relative path below p.To (each keeps its ID and history; one
	// OpModified version each). ENOTFOUND when no live memory lies below
	// p.From; EPATHCONFLICT when a new path overlaps a memory that is not
	// moving; EINVALID for bad paths, p.To below p.From (or equal), a new
	// path that breaks the path limits, or an archived store; EPRECONDITION
	// when p.Expect is set and does not match; EFORBIDDEN for a session
	// that has the store read_only.
	RenameDirectory(ctx context.Context, storeID string, p RenameDirectoryParams) (*DirectoryChange, error)
	// DeleteDirectory deletes every live memory below p.Path (one OpDeleted
	// version each). Allowed on an archived store, as deleting one memory
	// is. ENOTFOUND when none lies below it; EPRECONDITION when p.Expect is
	// set and does not match; EINVALID for a bad path; EFORBIDDEN as in
	// RenameDirectory.
	DeleteDirectory(ctx context.Context, storeID string, p DeleteDirectoryParams) (*DirectoryChange, error)
}

// MemoryPrecondition names a memory and the content hash it must have.
type MemoryPrecondition struct {
	MemoryID string
	SHA256   string
}

// RenameDirectoryParams renames the directory From to To. Both are
// directory paths written like memory paths ("/notes/2024", no trailing
// "/"). When Expect is not nil, the live memories below From must be exactly
// the memories it names, each with the hash it gives, or nothing changes.
type RenameDirectoryParams struct {
	From   string
	To     string
	Expect []MemoryPrecondition
}

// DeleteDirectoryParams deletes the directory Path; Expect as in
// RenameDirectoryParams.
type DeleteDirectoryParams struct {
	Path   string
	Expect []MemoryPrecondition
}

// DirectoryChange is what a directory operation changed: the memories it
// renamed (in their new state, without content) or deleted (in their last
// state, without content), in ascending order of their old paths.
type DirectoryChange struct {
	Memories []Memory
}
