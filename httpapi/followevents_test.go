package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
)

// openedTransport counts the event streams opened (answered 200) and
// tells the first on opened: once a client has the stream's response,
// its starting position is fixed.
type openedTransport struct {
	rt     http.RoundTripper
	n      *atomic.Int32
	opened chan<- struct{}
	before *atomic.Pointer[func(*http.Request)] // when set, called before each request goes
}

func (o openedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if f := o.before.Load(); f != nil {
		(*f)(r)
	}
	res, err := o.rt.RoundTrip(r)
	if err == nil && res.StatusCode == http.StatusOK && strings.HasSuffix(r.URL.Path, "/events/stream") {
		if o.n.Add(1) == 1 {
			o.opened <- struct{}{}
		}
	}
	return res, err
}

// followCase is the state a TestFollowEvents case acts on.
type followCase struct {
	e         *testEnv
	id        string    // the session followed
	keyID     string    // the follower's key
	px        *cutProxy // between the follower and the server
	ctx       context.Context
	cancel    context.CancelFunc
	seqs      chan int64                          // each Seq fn is called with
	ended     chan struct{}                       // closed once FollowEvents returned
	agentless bool                                // the session has no agent: its end appends no event
	before    atomic.Pointer[func(*http.Request)] // see openedTransport
}

// appendMessages appends n agent messages to the session and returns the
// last one's Seq.
func (h *followCase) appendMessages(t *testing.T, n int) int64 {
	t.Helper()
	last, err := appendMessages(h.e.svc, h.e.ctx(), h.id, h.agentless, n)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

// appendMessages appends n agent messages to the session through svc, as
// its agent does (AppendAgentEvents) or, agentless, as ctx's principal
// (AppendEvents), and returns the last one's Seq.
func appendMessages(svc *core.Service, ctx context.Context, id string, agentless bool, n int) (int64, error) {
	var last int64
	for i := range n {
		ne := []trove.NewSessionEvent{{Type: trove.EventAgentMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":"m%d"}]}`, i)}}
		var evs []trove.SessionEvent
		var err error
		if agentless {
			evs, err = svc.AppendEvents(ctx, id, ne)
		} else {
			evs, err = svc.AppendAgentEvents(context.Background(), id, ne, core.AgentEventsOptions{})
		}
		if err != nil {
			return 0, fmt.Errorf("appending: %w", err)
		}
		last = evs[len(evs)-1].Seq
	}
	return last, nil
}

// delivered returns once fn was called with seq, and fails t when
// FollowEvents returns first.
func (h *followCase) delivered(t *testing.T, seq int64) {
	t.Helper()
	for {
		select {
		case s := <-h.seqs:
			if s >= seq {
				return
			}
		case <-h.ended:
			for {
				select {
				case s := <-h.seqs:
					if s >= seq {
						return
					}
				default:
					t.Fatalf("FollowEvents returned before seq %d was delivered", seq)
				}
			}
		case <-h.ctx.Done():
			t.Fatalf("seq %d was not delivered: %v", seq, h.ctx.Err())
		}
	}
}

// restart restarts the server as trove serve does: a new server, over a
// new core.Service on the same database, takes the proxy's new
// connections, then the old one shuts down gracefully (http.Server's
// Shutdown, which closes its event streams normally: CloseStreams). From
// then on the case writes through the new service.
func (h *followCase) restart(t *testing.T) {
	t.Helper()
	svc := core.New(h.e.db, core.Options{})
	url, stop := serveTransport(t, netHTTP, httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Events: svc, Auth: svc,
		Agents: svc, Environments: svc, Work: svc}), nil)
	t.Cleanup(stop) // before the env's cleanup closes the database
	h.px.retarget(url)
	h.e.stop()
	h.e.svc = svc
}

// followed is what the test compares of an event.
type followed struct {
	Seq      int64
	ID, Type string
}

// TestFollowEvents: httpapi.Client.FollowEvents (internal/follow's loop
// over the session's event stream) delivers each event after its start
// once, in Seq order, across cut connections and a server restart (whose
// shutdown closes the stream normally); it ends with nil when the session
// ends, and with fn's error as is, ctx's error, ENOTFOUND for a
// deleted session, the final error of a revoked key's error event or of
// an answer.
func TestFollowEvents(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	tests := []struct {
		name        string
		before      int                           // messages stored before following
		after       func(head int64) int64        // FollowEvents' after, from the head before following
		secret      string                        // the follower's key ("": a valid one)
		stopAt      int                           // fn returns stop at this event, counted from 1 (0: never)
		act         func(*testing.T, *followCase) // once the first stream is open
		wantErr     error                         // compared by code when it has one, else as is
		agentless   bool                          // follow a session with no agent (else a managed one)
		wantAll     bool                          // delivered: the whole transcript after the start
		wantN       int                           // else, when not -1: how many events were delivered
		wantStreams int                           // at least this many streams were opened
	}{
		{
			name:   "after < 0 starts where the stream opens and ends with nil when the session ends",
			before: 3,
			after:  func(int64) int64 { return -1 },
			act: func(t *testing.T, h *followCase) {
				h.appendMessages(t, 4)
				if _, err := h.e.svc.EndSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantAll: true,
		},
		{
			name:   "after >= 0 resumes after that seq, to the session's end",
			before: 5,
			after:  func(head int64) int64 { return head - 2 },
			act: func(t *testing.T, h *followCase) {
				if _, err := h.e.svc.EndSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantAll: true,
		},
		{
			name:   "connections cut again and again resume with Last-Event-ID: each event once, in order",
			before: 10,
			after:  func(int64) int64 { return 0 },
			act: func(t *testing.T, h *followCase) {
				// Each batch after a cut can only come on a new stream, and
				// is appended while the follower reconnects: one that did not
				// resume where it stopped would miss or repeat some.
				for range 6 {
					h.delivered(t, h.appendMessages(t, 8))
					h.px.cut()
				}
				h.appendMessages(t, 8)
				if _, err := h.e.svc.EndSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantAll:     true,
			wantStreams: 7,
		},
		{
			name:   "a server restart closes the stream normally but the session goes on: it resumes on the new server, to the session's end",
			before: 3,
			after:  func(int64) int64 { return -1 },
			act: func(t *testing.T, h *followCase) {
				h.delivered(t, h.appendMessages(t, 4))
				h.restart(t)
				// Appended while the follower reconnects, then once it is
				// back: a follower that took the closed stream for the
				// session's end has returned nil without them.
				h.delivered(t, h.appendMessages(t, 4))
				h.appendMessages(t, 4)
				if _, err := h.e.svc.EndSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantAll:     true,
			wantStreams: 2,
		},
		{
			name:   "the session ends after a restart closed the stream, before the follower looks: the events the stream did not carry are still delivered",
			before: 3,
			after:  func(int64) int64 { return 0 },
			act: func(t *testing.T, h *followCase) {
				h.delivered(t, h.appendMessages(t, 2))
				// The follower asks for the session once its stream closed
				// normally: first, the session gets events and ends.
				svc, ctx, get := h.e.svc, h.e.ctx(), "/trove/v1/sessions/"+h.id
				var once sync.Once
				hook := func(r *http.Request) {
					if r.URL.Path != get {
						return
					}
					once.Do(func() {
						if _, err := appendMessages(svc, ctx, h.id, false, 3); err != nil {
							t.Error(err)
						}
						if _, err := svc.EndSession(ctx, h.id); err != nil {
							t.Error(err)
						}
					})
				}
				h.before.Store(&hook)
				h.restart(t)
			},
			wantAll:     true,
			wantStreams: 2,
		},
		{
			name:      "an agent-less session's end (no event) ends it with nil, after every event",
			before:    2,
			after:     func(int64) int64 { return 0 },
			agentless: true,
			act: func(t *testing.T, h *followCase) {
				h.delivered(t, h.appendMessages(t, 3))
				h.appendMessages(t, 2)
				if _, err := h.e.svc.EndSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantAll: true,
		},
		{
			name:      "an agent-less session across a restart, to its end",
			before:    2,
			after:     func(int64) int64 { return -1 },
			agentless: true,
			act: func(t *testing.T, h *followCase) {
				h.delivered(t, h.appendMessages(t, 3))
				h.restart(t)
				h.delivered(t, h.appendMessages(t, 3))
				h.appendMessages(t, 2)
				if _, err := h.e.svc.EndSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantAll:     true,
			wantStreams: 2,
		},
		{
			name:    "fn's error ends it as is",
			before:  3,
			after:   func(int64) int64 { return 0 },
			stopAt:  2,
			wantErr: stop,
			wantN:   2,
		},
		{
			name:   "a deleted session ends it with ENOTFOUND",
			before: 2,
			after:  func(int64) int64 { return 0 },
			act: func(t *testing.T, h *followCase) {
				if err := h.e.svc.DeleteSession(h.e.ctx(), h.id); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: trove.Errorf(trove.ENOTFOUND, "deleted"),
			wantN:   -1,
		},
		{
			name:  "a revoked key's error event ends it with EUNAUTHENTICATED",
			after: func(int64) int64 { return -1 },
			act: func(t *testing.T, h *followCase) {
				if err := h.e.svc.RevokeKey(context.Background(), h.keyID); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: trove.Errorf(trove.EUNAUTHENTICATED, "revoked"),
		},
		{
			name:    "ctx's end ends it with ctx's error",
			after:   func(int64) int64 { return -1 },
			act:     func(_ *testing.T, h *followCase) { h.cancel() },
			wantErr: context.Canceled,
		},
		{
			name:    "a bad key is not retried: EUNAUTHENTICATED",
			after:   func(int64) int64 { return 0 },
			secret:  "trove_sk_nope",
			wantErr: trove.Errorf(trove.EUNAUTHENTICATED, "bad key"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, netHTTP, withManaged)
			f := newManagedFixture(t, e)
			p := trove.CreateSessionParams{Agent: &trove.AgentRef{ID: f.agent.ID}, EnvironmentID: f.env.ID}
			if tt.agentless {
				p = trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: f.stores[2]}}}
			}
			se, _, err := e.svc.CreateSession(e.ctx(), p)
			if err != nil {
				t.Fatal(err)
			}
			k, secret, err := e.svc.CreateKey(context.Background(), testWorkspace, "follower")
			if err != nil {
				t.Fatal(err)
			}
			if tt.secret != "" {
				secret = tt.secret
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			h := &followCase{e: e, id: se.ID, keyID: k.ID, px: newCutProxy(t, e.url), ctx: ctx, cancel: cancel, seqs: make(chan int64, 1000), ended: make(chan struct{}), agentless: tt.agentless}
			h.appendMessages(t, tt.before)
			head := int64(0)
			last, err := e.svc.ListEvents(e.ctx(), se.ID, trove.ListEventsParams{Order: "desc", Limit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(last.Data) > 0 {
				head = last.Data[0].Seq
			}
			after := tt.after(head)

			tr := &http.Transport{}
			t.Cleanup(tr.CloseIdleConnections)
			var streams atomic.Int32
			opened := make(chan struct{}, 1)
			c := httpapi.NewClient(h.px.url(), secret, httpapi.WithMaxRetries(0),
				httpapi.WithHTTPClient(&http.Client{Transport: openedTransport{rt: tr, n: &streams, opened: opened, before: &h.before}}))
			var got []followed
			done := make(chan error, 1)
			go func() {
				err := c.FollowEvents(ctx, se.ID, after, func(ev trove.SessionEvent) error {
					got = append(got, followed{Seq: ev.Seq, ID: ev.ID, Type: ev.Type})
					if len(got) == tt.stopAt {
						return stop
					}
					h.seqs <- ev.Seq
					return nil
				})
				close(h.ended)
				done <- err
			}()
			select {
			case <-opened:
				if tt.act != nil {
					tt.act(t, h)
				}
				err = <-done
			case err = <-done:
			}

			if code := trove.ErrorCode(tt.wantErr); code != "" {
				if trove.ErrorCode(err) != code {
					t.Fatalf("FollowEvents = %v, want code %s", err, code)
				}
			} else if err != tt.wantErr { // as is: not wrapped
				t.Fatalf("FollowEvents = %#v, want %#v", err, tt.wantErr)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Seq <= got[i-1].Seq {
					t.Fatalf("delivered out of order or twice: %v", got)
				}
			}
			if len(got) > 0 && got[0].Seq <= max(after, 0) {
				t.Fatalf("delivered seq %d, not after %d", got[0].Seq, after)
			}
			if tt.wantAll {
				from := after
				if from < 0 {
					from = head // where the stream opened: nothing was appended in between
				}
				var want []followed
				for page, err := range trove.Pages(e.ctx(), func(ctx context.Context, cursor string) (*trove.Page[trove.SessionEvent], error) {
					return e.svc.ListEvents(ctx, se.ID, trove.ListEventsParams{AfterSeq: from, Limit: 100, Cursor: cursor})
				}) {
					if err != nil {
						t.Fatal(err)
					}
					for _, ev := range page.Data {
						want = append(want, followed{Seq: ev.Seq, ID: ev.ID, Type: ev.Type})
					}
				}
				switch {
				case len(want) == 0:
					t.Fatalf("the transcript after %d is empty", from)
				case !tt.agentless && want[len(want)-1].Type != trove.EventSessionStatusTerminated:
					t.Fatalf("the transcript after %d does not end with the session's end: %v", from, want)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("delivered (-transcript after %d +got):\n%s", from, diff)
				}
			} else if tt.wantN != -1 && len(got) != tt.wantN {
				t.Errorf("delivered %d events, want %d: %v", len(got), tt.wantN, got)
			}
			if n := int(streams.Load()); n < tt.wantStreams {
				t.Errorf("%d streams opened, want at least %d: it did not reconnect after each cut", n, tt.wantStreams)
			}
		})
	}
}
