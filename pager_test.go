package trove

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// reply is a scripted answer of a listing to one cursor.
type reply struct {
	items   []int
	next    string
	err     error
	nilPage bool // answer neither a page nor an error
}

// listing answers cursors from a script and records the cursors asked
// for; cancel, when not nil, is called while answering cancelOn.
type listing struct {
	script   map[string]reply
	cancelOn string
	cancel   context.CancelFunc
	calls    []string
}

func (l *listing) fetch(ctx context.Context, cursor string) (*Page[int], error) {
	l.calls = append(l.calls, cursor)
	if len(l.calls) > 20 {
		return nil, errors.New("the pager did not stop") // fail, not hang
	}
	if l.cancel != nil && cursor == l.cancelOn {
		l.cancel()
	}
	r, ok := l.script[cursor]
	switch {
	case !ok:
		return nil, Errorf(EINVALID, "unknown cursor %q", cursor)
	case r.err != nil:
		return nil, r.err
	case r.nilPage:
		return nil, nil
	}
	return &Page[int]{Data: r.items, NextPage: r.next}, nil
}

func TestPager(t *testing.T) {
	t.Parallel()
	gone := Errorf(ENOTFOUND, "no such store")
	threePages := map[string]reply{"": {items: []int{1, 2}, next: "a"}, "a": {items: []int{3}, next: "b"}, "b": {items: []int{4}}}
	tests := []struct {
		name     string
		script   map[string]reply
		cancelOn string // cancel the context while fetching this cursor
		canceled bool   // the context is canceled before the first fetch
		stop     int    // the consumer breaks after this many items (0: never)
		want     []int
		calls    []string
		errIs    error  // the error yielded, by errors.Is
		errText  string // or a part of its text
	}{
		{name: "one page", script: map[string]reply{"": {items: []int{1, 2, 3}}}, want: []int{1, 2, 3}, calls: []string{""}},
		{name: "empty listing", script: map[string]reply{"": {}}, calls: []string{""}},
		{name: "three pages", script: threePages, want: []int{1, 2, 3, 4}, calls: []string{"", "a", "b"}},
		{
			name:   "empty pages with a next cursor are followed",
			script: map[string]reply{"": {next: "a"}, "a": {items: []int{1}, next: "b"}, "b": {next: "c"}, "c": {}},
			want:   []int{1}, calls: []string{"", "a", "b", "c"},
		},
		{name: "error on the first fetch", script: map[string]reply{"": {err: gone}}, calls: []string{""}, errIs: gone},
		{
			name:   "error mid-way keeps the items before it and fetches no further",
			script: map[string]reply{"": {items: []int{1, 2}, next: "a"}, "a": {err: gone}, "b": {items: []int{3}}},
			want:   []int{1, 2}, calls: []string{"", "a"}, errIs: gone,
		},
		{
			name:   "same cursor forever",
			script: map[string]reply{"": {items: []int{1}, next: "a"}, "a": {items: []int{1}, next: "a"}},
			want:   []int{1}, calls: []string{"", "a"}, errIs: ErrCursorRepeated,
		},
		{
			name:   "same cursor forever on empty pages",
			script: map[string]reply{"": {next: "a"}, "a": {next: "a"}},
			calls:  []string{"", "a"}, errIs: ErrCursorRepeated,
		},
		{
			name:   "no page and no error",
			script: map[string]reply{"": {items: []int{1}, next: "a"}, "a": {nilPage: true}},
			want:   []int{1}, calls: []string{"", "a"}, errText: `cursor "a" with no page and no error`,
		},
		{name: "break on the first item", script: threePages, stop: 1, want: []int{1}, calls: []string{""}},
		{name: "break on a page's last item fetches no next page", script: threePages, stop: 2, want: []int{1, 2}, calls: []string{""}},
		{name: "break on the second page's first item", script: threePages, stop: 3, want: []int{1, 2, 3}, calls: []string{"", "a"}},
		{name: "context canceled before the first fetch", script: threePages, canceled: true, errIs: context.Canceled},
		{
			name: "context canceled during a fetch: its page stands, no next fetch", script: threePages, cancelOn: "a",
			want: []int{1, 2, 3}, calls: []string{"", "a"}, errIs: context.Canceled,
		},
		{name: "context canceled during the last fetch", script: threePages, cancelOn: "b", want: []int{1, 2, 3, 4}, calls: []string{"", "a", "b"}},
	}
	type key struct{}
	checkErr := func(t *testing.T, err error, errIs error, errText string) {
		t.Helper()
		switch {
		case errIs == nil && errText == "":
			if err != nil {
				t.Errorf("error %v, want none", err)
			}
		case errIs != nil && !errors.Is(err, errIs):
			t.Errorf("error %v, want %v", err, errIs)
		case errText != "" && (err == nil || !strings.Contains(err.Error(), errText)):
			t.Errorf("error %v, want one saying %q", err, errText)
		}
	}
	// consumers read the listing as a slice of items: the item iterator
	// (breaking after stop items), the page iterator and the collector.
	consumers := []struct {
		name    string
		consume func(ctx context.Context, fetch PageFetch[int], stop int) ([]int, error)
	}{
		{"Items", func(ctx context.Context, fetch PageFetch[int], stop int) ([]int, error) {
			var got []int
			var gotErr error
			for v, err := range Items(ctx, fetch) {
				if gotErr != nil {
					t.Errorf("Items yielded (%d, %v) after the error %v", v, err, gotErr)
				}
				if err != nil {
					if v != 0 {
						t.Errorf("Items yielded %d with the error %v, want the zero value", v, err)
					}
					gotErr = err
					continue // the iteration must end by itself
				}
				got = append(got, v)
				if len(got) == stop {
					break
				}
			}
			return got, gotErr
		}},
		{"Pages", func(ctx context.Context, fetch PageFetch[int], stop int) ([]int, error) {
			var got []int
			var gotErr error
			for pg, err := range Pages(ctx, fetch) {
				if gotErr != nil {
					t.Errorf("Pages yielded (%v, %v) after the error %v", pg, err, gotErr)
				}
				if err != nil {
					if pg != nil {
						t.Errorf("Pages yielded %v with the error %v, want nil", pg, err)
					}
					gotErr = err
					continue
				}
				got = append(got, pg.Data...)
			}
			return got, gotErr
		}},
		{"AllItems", func(ctx context.Context, fetch PageFetch[int], stop int) ([]int, error) {
			got, err := AllItems(ctx, fetch)
			if err == nil && got == nil {
				t.Error("AllItems = nil, nil; want a slice")
			}
			if err != nil && got != nil {
				t.Errorf("AllItems = %v with the error %v, want nil", got, err)
			}
			return got, err
		}},
	}
	for _, c := range consumers {
		for _, tc := range tests {
			if tc.stop > 0 && c.name != "Items" {
				continue // only an item iterator breaks mid-page; see TestPagesBreak
			}
			t.Run(c.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, tc.name))
				defer cancel()
				l := &listing{script: tc.script}
				if tc.cancelOn != "" {
					l.cancelOn, l.cancel = tc.cancelOn, cancel
				}
				if tc.canceled {
					cancel()
				}
				got, err := c.consume(ctx, func(fctx context.Context, cursor string) (*Page[int], error) {
					if fctx.Value(key{}) != tc.name {
						t.Errorf("fetch(%q) was not given the pager's context", cursor)
					}
					return l.fetch(fctx, cursor)
				}, tc.stop)
				want := tc.want
				if c.name == "AllItems" && (tc.errIs != nil || tc.errText != "") {
					want = nil // all or nothing
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("items (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.calls, l.calls); diff != "" {
					t.Errorf("cursors fetched (-want +got):\n%s", diff)
				}
				checkErr(t, err, tc.errIs, tc.errText)
			})
		}
	}
}

// TestPagesBreak: a page iterator left after a page fetches no other.
func TestPagesBreak(t *testing.T) {
	t.Parallel()
	l := &listing{script: map[string]reply{"": {items: []int{1}, next: "a"}, "a": {items: []int{2}, next: "b"}, "b": {}}}
	n := 0
	for pg, err := range Pages(context.Background(), l.fetch) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; pg.NextPage == "a" {
			break
		}
	}
	if n != 1 || len(l.calls) != 1 {
		t.Errorf("%d pages yielded, cursors fetched %q; want 1 page and one fetch", n, l.calls)
	}
}
