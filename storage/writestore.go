package storage

import "context"

type writeStoreKey struct{}

// WithWriteStore returns ctx marked for a Write to one store: a write
// whose first StoreLock is of store id. A driver may use the mark to queue
// that store's writers before they take a connection (storage/postgres's
// store gates); it changes nothing the write does, and a driver that has
// no use for it ignores it.
func WithWriteStore(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, writeStoreKey{}, id)
}

// WriteStoreOf returns the store WithWriteStore marked ctx with, or "".
func WriteStoreOf(ctx context.Context) string {
	id, _ := ctx.Value(writeStoreKey{}).(string)
	return id
}
