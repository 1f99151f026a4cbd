package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// TestClientListEventsParams: httpapi.Client.ListEvents passes every
// ListEventsParams field to the server (after_seq, order, types[],
// created_at[…]), so that it lists what core lists for the same
// parameters; it used to send only limit and page, and a "newest first"
// or "after Seq" listing over HTTP silently came back oldest first from
// the start.
func TestClientListEventsParams(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	ctx := context.Background()
	se, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	var all []trove.SessionEvent
	for i := range 6 {
		typ := trove.EventUserMessage
		body := `{"content":[{"type":"text","text":"hello"}]}`
		if i%2 == 1 {
			typ, body = trove.EventAgentToolUse, `{"name":"memory","input":{"command":"view","path":"/memories"}}`
		}
		evs, err := e.svc.AppendEvents(e.ctx(), se.ID, []trove.NewSessionEvent{{Type: typ, Body: body}})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
	}
	mid := all[2].ProcessedAt
	cl := httpapi.NewClient(e.url, e.key)
	ids := func(p *trove.Page[trove.SessionEvent]) []string {
		var out []string
		for _, ev := range p.Data {
			out = append(out, ev.Type+" "+ev.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		p    trove.ListEventsParams
		want int // events listed, at least 1 (a case that lists nothing checks nothing)
	}{
		{"newest first", trove.ListEventsParams{Order: "desc", Limit: 2}, 2},
		{"after a seq", trove.ListEventsParams{AfterSeq: all[3].Seq}, 2},
		{"one type", trove.ListEventsParams{Types: []string{trove.EventAgentToolUse}}, 3},
		{"created at or after", trove.ListEventsParams{CreatedAt: trove.TimeRange{GTE: &mid}}, 0},
		{"created before", trove.ListEventsParams{CreatedBefore: ptrTime(mid.Add(time.Microsecond))}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := e.svc.ListEvents(e.ctx(), se.ID, tc.p)
			if err != nil {
				t.Fatalf("core: %v", err)
			}
			if tc.want > 0 && len(want.Data) != tc.want {
				t.Fatalf("core listed %d events, the test expects %d", len(want.Data), tc.want)
			}
			if len(want.Data) == 0 || len(want.Data) == len(all) {
				t.Fatalf("core listed %d of %d events: the case does not tell a dropped parameter", len(want.Data), len(all))
			}
			got, err := cl.ListEvents(ctx, se.ID, tc.p)
			if err != nil {
				t.Fatalf("client: %v", err)
			}
			if d := cmp.Diff(ids(want), ids(got)); d != "" {
				t.Errorf("the client lists otherwise than core (-core +client):\n%s", d)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
