package core

import "sync"

// storeOwnersMax bounds storeOwners; when full it starts over.
const storeOwnersMax = 100_000

// storeOwners remembers the workspace of stores seen by a successful
// StoreGet. A store's workspace never changes and store IDs are never
// reused, so an entry never goes stale; it says nothing about whether the
// store still exists (a deleted store keeps its entry, harmlessly: its
// memories are gone with it).
type storeOwners struct {
	mu sync.RWMutex
	m  map[string]string // store ID → workspace ID
}

// owns reports whether storeID is known to belong to workspaceID.
func (o *storeOwners) owns(storeID, workspaceID string) bool {
	o.mu.RLock()
	ws, ok := o.m[storeID]
	o.mu.RUnlock()
	return ok && ws == workspaceID
}

// add records that storeID belongs to workspaceID.
func (o *storeOwners) add(storeID, workspaceID string) {
	if o.owns(storeID, workspaceID) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) >= storeOwnersMax {
		o.m = make(map[string]string)
	}
	o.m[storeID] = workspaceID
}
