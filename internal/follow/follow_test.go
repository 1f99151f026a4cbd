package follow

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

// The table's feed carries strings ("v<seq>"), not trove.Change: any item
// type is followed the same way, its Seq told by the Conn.

// A step is one scripted connection.
type step func(ctx context.Context, cancel context.CancelFunc, f *Feed[string]) error

// v is the item at seq.
func v(seq int64) string { return fmt.Sprint("v", seq) }

// vs is the items at seqs.
func vs(seqs ...int64) []string {
	out := make([]string, len(seqs))
	for i, s := range seqs {
		out[i] = v(s)
	}
	return out
}

// live goes live, delivers seqs (stopping at Deliver's error, returned
// wrapped as a transport would) and then ends with err.
func live(err error, seqs ...int64) step {
	return func(_ context.Context, _ context.CancelFunc, f *Feed[string]) error {
		f.Live()
		f.Live() // twice: connected(true) is still told once
		for _, s := range seqs {
			if derr := f.Deliver(s, v(s)); derr != nil {
				return fmt.Errorf("the stream: %w", derr)
			}
		}
		return err
	}
}

// fail ends the connection with err before it goes live.
func fail(err error) step {
	return func(context.Context, context.CancelFunc, *Feed[string]) error { return err }
}

var (
	errDown = trove.Errorf(trove.EUNAVAILABLE, "the server could not be reached")
	errGone = trove.Errorf(trove.ENOTFOUND, "no such store")
	errStop = errors.New("fn: stop")
)

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		after        int64
		conns        []step
		fnErrAt      int64 // fn returns errStop for the item at this Seq (0: none; no script delivers 0)
		cancelInWait bool  // the context ends during the first pause
		wantErr      error
		wantAfters   []int64  // f.After() as each connection starts
		wantGot      []string // items fn saw
		wantLog      []string // connected calls and pauses, in order
	}{
		{
			name:  "reconnect after an error resumes from the last seq delivered",
			after: 5,
			conns: []step{
				live(errDown, 6, 7),
				live(errGone, 7, 8), // the new connection repeats 7: not delivered again
			},
			wantErr:    errGone,
			wantAfters: []int64{5, 7},
			wantGot:    vs(6, 7, 8),
			wantLog:    []string{"up", "down", "wait 100ms", "up", "down"},
		},
		{
			name: "advance moves the cursor past seqs without a change, never back",
			conns: []step{
				func(_ context.Context, _ context.CancelFunc, f *Feed[string]) error {
					f.Advance(10)
					f.Advance(4)
					return errDown
				},
				fail(errGone),
			},
			wantErr:    errGone,
			wantAfters: []int64{0, 10},
			wantLog:    []string{"wait 100ms"},
		},
		{
			name:       "fn's error ends the loop as is, whatever the connection returned",
			conns:      []step{live(errDown, 1, 2, 3)},
			fnErrAt:    2,
			wantErr:    errStop,
			wantAfters: []int64{0},
			wantGot:    vs(1, 2),
			wantLog:    []string{"up", "down"},
		},
		{
			name: "fn's error sticks: a Conn that goes on delivering does not call fn again",
			conns: []step{func(_ context.Context, _ context.CancelFunc, f *Feed[string]) error {
				f.Live()
				_ = f.Deliver(1, v(1))
				_ = f.Deliver(2, v(2))
				return nil
			}},
			fnErrAt:    1,
			wantErr:    errStop,
			wantAfters: []int64{0},
			wantGot:    vs(1),
			wantLog:    []string{"up", "down"},
		},
		{
			name: "ctx ends during a connection",
			conns: []step{func(ctx context.Context, cancel context.CancelFunc, f *Feed[string]) error {
				f.Live()
				cancel()
				return ctx.Err()
			}},
			wantErr:    context.Canceled,
			wantAfters: []int64{0},
			wantLog:    []string{"up", "down"},
		},
		{
			name:         "ctx ends during the pause",
			conns:        []step{fail(errDown)},
			cancelInWait: true,
			wantErr:      context.Canceled,
			wantAfters:   []int64{0},
			wantLog:      []string{"wait 100ms"},
		},
		{
			name: "the pause doubles while connecting fails, up to the maximum, and starts again after a live connection",
			conns: []step{
				fail(errDown), fail(errDown), fail(errDown), fail(errDown), fail(errDown), fail(errDown), fail(errDown),
				live(errDown), fail(nil), fail(errGone),
			},
			wantErr:    errGone,
			wantAfters: []int64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
			wantLog: []string{
				"wait 100ms", "wait 200ms", "wait 400ms", "wait 800ms", "wait 1.6s", "wait 3.2s", "wait 5s",
				"up", "down", "wait 100ms", "wait 200ms",
			},
		},
		{
			name:       "the feed's end stops with nil after what was delivered",
			conns:      []step{live(ErrEnded, 1, 2)},
			wantAfters: []int64{0},
			wantGot:    vs(1, 2),
			wantLog:    []string{"up", "down"},
		},
		{
			name:       "the feed's end wrapped, before going live, also stops with nil",
			after:      3,
			conns:      []step{fail(fmt.Errorf("the stream: %w", ErrEnded))},
			wantAfters: []int64{3},
		},
		{
			name:       "fn's error wins over the feed's end",
			conns:      []step{live(ErrEnded, 1, 2)},
			fnErrAt:    2,
			wantErr:    errStop,
			wantAfters: []int64{0},
			wantGot:    vs(1, 2),
			wantLog:    []string{"up", "down"},
		},
		{
			name: "ctx's end wins over the feed's end",
			conns: []step{func(_ context.Context, cancel context.CancelFunc, f *Feed[string]) error {
				cancel()
				return ErrEnded
			}},
			wantErr:    context.Canceled,
			wantAfters: []int64{0},
		},
		{
			name:  "a negative start: the stream's starting position moves it up, then every later seq is delivered",
			after: -1,
			conns: []step{
				func(_ context.Context, _ context.CancelFunc, f *Feed[string]) error {
					f.Live()
					f.Advance(4) // where the stream starts
					for _, s := range []int64{3, 4, 5, 6} {
						if err := f.Deliver(s, v(s)); err != nil {
							return err
						}
					}
					return errDown
				},
				live(ErrEnded, 6, 7),
			},
			wantAfters: []int64{-1, 6},
			wantGot:    vs(5, 6, 7),
			wantLog:    []string{"up", "down", "wait 100ms", "up", "down"},
		},
		{
			name:       "a negative start stays negative across a failed connection and delivers from the first seq",
			after:      -1,
			conns:      []step{fail(errDown), live(ErrEnded, 1, 2)},
			wantAfters: []int64{-1, -1},
			wantGot:    vs(1, 2),
			wantLog:    []string{"wait 100ms", "up", "down"},
		},
		{
			name:       "a negative start ended before anything moved it stops with nil",
			after:      -1,
			conns:      []step{live(ErrEnded)},
			wantAfters: []int64{-1},
			wantLog:    []string{"up", "down"},
		},
		{name: "EUNAUTHENTICATED is final", conns: []step{fail(trove.Errorf(trove.EUNAUTHENTICATED, "x"))}, wantErr: trove.Errorf(trove.EUNAUTHENTICATED, "x"), wantAfters: []int64{0}},
		{name: "EFORBIDDEN is final", conns: []step{fail(trove.Errorf(trove.EFORBIDDEN, "x"))}, wantErr: trove.Errorf(trove.EFORBIDDEN, "x"), wantAfters: []int64{0}},
		{name: "EINVALID is final", conns: []step{live(trove.Errorf(trove.EINVALID, "x"), 1)}, wantErr: trove.Errorf(trove.EINVALID, "x"), wantAfters: []int64{0}, wantGot: vs(1), wantLog: []string{"up", "down"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var afters []int64
			var got []string
			var log []string
			n := 0
			conn := func(ctx context.Context, f *Feed[string]) error {
				afters = append(afters, f.After())
				if n == len(tt.conns) {
					t.Fatalf("connection %d: the script has only %d", n+1, len(tt.conns))
				}
				n++
				return tt.conns[n-1](ctx, cancel, f)
			}
			fn := func(it string) error {
				got = append(got, it)
				if it == v(tt.fnErrAt) {
					return errStop
				}
				return nil
			}
			connected := func(up bool) {
				log = append(log, map[bool]string{true: "up", false: "down"}[up])
			}
			wait := func(ctx context.Context, d time.Duration) error {
				log = append(log, "wait "+d.String())
				if tt.cancelInWait {
					cancel()
				}
				return ctx.Err()
			}
			err := run(ctx, tt.after, conn, fn, connected, wait)
			if trove.ErrorCode(tt.wantErr) != "" {
				if trove.ErrorCode(err) != trove.ErrorCode(tt.wantErr) {
					t.Errorf("run = %v, want code %s", err, trove.ErrorCode(tt.wantErr))
				}
			} else if err != tt.wantErr { // as is: not wrapped
				t.Errorf("run = %#v, want %#v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantAfters, afters); diff != "" {
				t.Errorf("connected after (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantGot, got); diff != "" {
				t.Errorf("delivered (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLog, log); diff != "" {
				t.Errorf("connected and pauses (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunNilConnected: connected may be nil.
func TestRunNilConnected(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), 0, func(_ context.Context, f *Feed[trove.Change]) error {
		f.Live()
		return errGone
	}, func(trove.Change) error { return nil }, nil, func(context.Context, time.Duration) error { return nil })
	if trove.ErrorCode(err) != trove.ENOTFOUND {
		t.Fatalf("run = %v, want ENOTFOUND", err)
	}
}

// TestSleep: the real pause ends with ctx.
func TestSleep(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("sleep after cancel = %v, want context.Canceled", err)
	}
	if err := sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("sleep = %v", err)
	}
}
