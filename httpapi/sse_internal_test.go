package httpapi

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

// brokenReader returns its text, then err.
type brokenReader struct {
	r   io.Reader
	err error
}

func (b *brokenReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, b.err
	}
	return n, err
}

// TestReadSSE: the client streams' one reader of server-sent events
// hands each complete event to fn, stops at fn's error as is, marks a
// broken connection with errStreamRead, and refuses an event or a line
// larger than its bound instead of holding it.
func TestReadSSE(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	reset := errors.New("connection reset")
	type got struct{ ID, Event, Data string }
	tests := []struct {
		name     string
		in       io.Reader
		max      int
		stopAt   int // fn returns stop at this event, from 1 (0: never)
		want     []got
		wantErr  error  // errors.Is
		wantCode string // else a trove code, when not ""
	}{
		{
			name: "events, comments and multi-line data",
			in:   strings.NewReader(": hi\n\nid: 1\nevent: change\ndata: {\"a\":\ndata: 1}\n\nid:2\nevent:x\ndata:y\n\n"),
			max:  1 << 10,
			want: []got{{}, {"1", "change", `{"a":1}`}, {"2", "x", "y"}},
		},
		{
			name: "an event not ended by a blank line is not handed on",
			in:   strings.NewReader("id: 1\nevent: change\ndata: {}\n"),
			max:  1 << 10,
		},
		{
			name:    "fn's error, as is",
			in:      strings.NewReader("event: a\n\nevent: b\n\nevent: c\n\n"),
			max:     1 << 10,
			stopAt:  2,
			want:    []got{{"", "a", ""}, {"", "b", ""}},
			wantErr: stop,
		},
		{
			name:    "a broken connection is errStreamRead",
			in:      &brokenReader{strings.NewReader("event: a\n\n"), reset},
			max:     1 << 10,
			want:    []got{{"", "a", ""}},
			wantErr: errStreamRead,
		},
		{
			name:     "data over the bound, line by line",
			in:       strings.NewReader(strings.Repeat("data: "+strings.Repeat("x", 100)+"\n", 20) + "\n"),
			max:      1 << 10,
			wantCode: trove.EINTERNAL,
		},
		{
			name:     "one line over the bound",
			in:       strings.NewReader("data: " + strings.Repeat("x", 2<<10) + "\n\n"),
			max:      1 << 10,
			wantCode: trove.EINTERNAL,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var seen []got
			err := readSSE(tt.in, tt.max, func(e *sseEvent) error {
				seen = append(seen, got{e.id, e.event, string(e.data)})
				if len(seen) == tt.stopAt {
					return stop
				}
				return nil
			})
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v, want %v", err, tt.wantErr)
				}
			case tt.wantCode != "":
				if trove.ErrorCode(err) != tt.wantCode || errors.Is(err, errStreamRead) {
					t.Errorf("error %v, want %s", err, tt.wantCode)
				}
			case err != nil:
				t.Errorf("error %v, want nil", err)
			}
			if d := cmp.Diff(tt.want, seen); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}
