package storage

import "context"

// SearchReader is implemented by a driver whose search index is written
// outside the write transactions, so that it may lag the memory rows in a
// plain Read (SQLite: a queue applied later, storage/sqlite/searchindex.go).
type SearchReader interface {
	// ReadSearch is Driver.Read on a snapshot in which Tx.MemorySearch
	// reflects every Write that returned before ReadSearch was called
	// (read-your-writes), and finds no text that is not a live memory's
	// in that snapshot. It may first bring the index up to date, in a
	// write transaction of its own.
	ReadSearch(ctx context.Context, fn func(Tx) error) error
}

// ReadSearch runs fn as d.ReadSearch when d is a SearchReader, else as
// d.Read: the way to call Tx.MemorySearch outside a Write.
func ReadSearch(ctx context.Context, d Driver, fn func(Tx) error) error {
	if sr, ok := d.(SearchReader); ok {
		return sr.ReadSearch(ctx, fn)
	}
	return d.Read(ctx, fn)
}
