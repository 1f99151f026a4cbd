package trove

import (
	"context"
	"errors"
)

// Store names need not be unique: the hosted API (and Trove's, which is
// wire-compatible) creates a store whatever its name. But a name that two
// live stores share no longer names one store, and every command that
// takes a store by name then fails until one is renamed. So Trove's own
// front ends (the CLI's stores create, fork and import, the console's
// create and fork forms; apply never creates a second store of a name)
// refuse to create a store whose name a live store of the workspace
// already has, unless the user asks for it (--allow-duplicate-name).
// Archived stores do not count: their names can be reused.

// LiveStoreNamed returns a live (not archived) store of the caller's
// workspace named name, the newest if several are, or nil when none is.
func LiveStoreNamed(ctx context.Context, svc StoreService, name string) (*Store, error) {
	for st, err := range Items(ctx, func(ctx context.Context, cursor string) (*Page[Store], error) {
		return svc.ListStores(ctx, ListStoresParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return nil, err
		}
		if st.Name == name && st.ArchivedAt == nil {
			return &st, nil
		}
	}
	return nil, nil
}

// CheckStoreNameFree is nil when no live store of the caller's workspace
// is named name, and otherwise ECONFLICT naming that store (the caller
// says how to go on: another name, or the front end's override).
func CheckStoreNameFree(ctx context.Context, svc StoreService, name string) error {
	st, err := LiveStoreNamed(ctx, svc, name)
	if err != nil || st == nil {
		return err
	}
	e := Errorf(ECONFLICT, "a store named %q already exists (%s): choose another name", name, st.ID)
	e.DetailCode = DetailStoreNameTaken
	return e
}

// DetailStoreNameTaken is the DetailCode of CheckStoreNameFree's refusal.
const DetailStoreNameTaken = "store_name_taken"

// IsStoreNameTaken reports whether err is CheckStoreNameFree's refusal.
func IsStoreNameTaken(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == ECONFLICT && e.DetailCode == DetailStoreNameTaken
}
