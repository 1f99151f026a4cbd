package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
	"github.com/trovehq/trove/storage/sqlite/sqlitetest"
)

// TestNotifyEvents: the driver is a storage.EventNotifier. A commit made
// through it names the session it changed; a commit by another connection
// to the file (here a second Open, as another process would be) is heard
// as "" within the notify poll; with nothing committed, nothing is heard
// (the poll is one statement, not a wake-up of every waiter).
func TestNotifyEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := sqlitetest.Path(t)
	const poll = 20 * time.Millisecond
	db, err := sqlite.Open(ctx, path, sqlite.Options{AutoMigrate: true, NotifyPoll: poll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	heard := make(chan string, 1024)
	db.NotifyEvents(func(id string) {
		select {
		case heard <- id:
		default:
			t.Error("notification channel full")
		}
	})
	svc := core.New(db, core.Options{})
	k, _, err := svc.CreateKey(ctx, "wrkspc_notify", "test")
	if err != nil {
		t.Fatal(err)
	}
	pctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_notify", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	se, _, err := svc.CreateSession(pctx, trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	otherSvc := core.New(other, core.Options{})
	appendVia := func(s *core.Service) func() error {
		return func() error {
			_, err := s.AppendEvents(pctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"hi"}]}`}})
			return err
		}
	}
	drain := func() {
		for {
			select {
			case <-heard:
			default:
				return
			}
		}
	}
	tests := []struct {
		name   string
		commit func() error
		want   string
	}{
		{"an append through the driver names its session", appendVia(svc), se.ID},
		{"another connection's append is heard as any session", appendVia(otherSvc), ""},
		{"ending the session through the driver names it", func() error { _, err := svc.EndSession(pctx, se.ID); return err }, se.ID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			drain()
			if err := tc.commit(); err != nil {
				t.Fatal(err)
			}
			deadline := time.After(10 * time.Second)
			for {
				select {
				case id := <-heard:
					if id == tc.want {
						return
					}
				case <-deadline:
					t.Fatalf("no notification %q within 10 s", tc.want)
				}
			}
		})
	}
	t.Run("nothing committed, nothing heard", func(t *testing.T) {
		// Let any notification of the commits above arrive first.
		time.Sleep(5 * poll)
		drain()
		time.Sleep(10 * poll)
		select {
		case id := <-heard:
			t.Errorf("heard %q with nothing committed", id)
		default:
		}
	})
}
