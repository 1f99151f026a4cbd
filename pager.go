package trove

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// PageFetch fetches the page of a cursor-paginated listing that cursor
// names: "" names the first page, a page's NextPage the page after it.
// It is usually a closure that puts the cursor into a List method's
// params:
//
//	func(ctx context.Context, cursor string) (*trove.Page[trove.Store], error) {
//		p.Cursor = cursor
//		return svc.ListStores(ctx, p)
//	}
type PageFetch[T any] func(ctx context.Context, cursor string) (*Page[T], error)

// ErrCursorRepeated is the error of a listing whose page names itself as
// the page after it (a server that ignores or echoes the cursor): Pages
// stops there instead of reading the same page forever.
var ErrCursorRepeated = errors.New("the listing gave the cursor of the page just read as its next page")

// Pages iterates over the pages of a cursor-paginated listing, from the
// first (cursor "") to the last (NextPage ""). It is the one paging loop:
//
//   - fetch is called once per page, in order, with the cursor "" and then
//     each page's NextPage; never again once the loop body stops the
//     iteration (break, return), so a reader that has what it needs reads
//     no further page.
//   - ctx is checked before every fetch: once it is done, its error is
//     yielded (even when fetch would not have looked at ctx).
//   - an error ends the iteration: it is yielded once, with a nil page.
//     Errors from fetch are yielded as they are (a *Error keeps its
//     code), the others are ctx's, ErrCursorRepeated (wrapped, naming the
//     cursor) and a fetch that returned neither a page nor an error.
//   - a page with no items and a NextPage is yielded and followed: a
//     filtered listing may answer one.
//   - a page whose NextPage is the cursor that fetched it is not yielded:
//     ErrCursorRepeated is. Only that cursor is compared, so that memory
//     stays bounded; a server cycling through two or more cursors is not
//     caught.
//
// Pages holds one page at a time: the page yielded is the caller's.
func Pages[T any](ctx context.Context, fetch PageFetch[T]) iter.Seq2[*Page[T], error] {
	return func(yield func(*Page[T], error) bool) {
		cursor := ""
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			page, err := fetch(ctx, cursor)
			switch {
			case err != nil:
				yield(nil, err)
				return
			case page == nil:
				yield(nil, fmt.Errorf("trove: a listing answered the cursor %q with no page and no error", cursor))
				return
			case page.NextPage != "" && page.NextPage == cursor:
				yield(nil, fmt.Errorf("trove: %w (cursor %q)", ErrCursorRepeated, cursor))
				return
			}
			if !yield(page, nil) || page.NextPage == "" {
				return
			}
			cursor = page.NextPage
		}
	}
}

// Items iterates over the items of a cursor-paginated listing, in order:
// Pages (and its contract) one item at a time. An error is yielded once,
// with T's zero value, and ends the iteration; the items yielded before
// it stand.
func Items[T any](ctx context.Context, fetch PageFetch[T]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for page, err := range Pages(ctx, fetch) {
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range page.Data {
				if !yield(it, nil) {
					return
				}
			}
		}
	}
}

// AllItems returns every item of a cursor-paginated listing, in order
// (never nil), or nil and the first error (see Pages). It holds the whole
// listing in memory: a caller that can act on one item or one page at a
// time ranges over Items or Pages instead.
func AllItems[T any](ctx context.Context, fetch PageFetch[T]) ([]T, error) {
	all := []T{}
	for page, err := range Pages(ctx, fetch) {
		if err != nil {
			return nil, err
		}
		all = append(all, page.Data...)
	}
	return all, nil
}
