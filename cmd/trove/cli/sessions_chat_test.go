package cli

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
)

// playTurn plays the agent loop for one turn: it waits for a user.message
// after seq 0, then answers it and goes idle.
func playTurn(t *testing.T, svc *core.Service, sessionID string) chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(workspaceCtx(), 20*time.Second)
		defer cancel()
		if _, err := svc.WaitEvents(ctx, sessionID, 0); err != nil {
			done <- err
			return
		}
		_, err := svc.AppendAgentEvents(context.Background(), sessionID, []trove.NewSessionEvent{
			{Type: trove.EventSessionStatusRunning},
			{Type: trove.EventAgentToolUse, Body: `{"name":"read","input":{"path":"/mnt/memory/notes/todo.md"},"evaluated_permission":"allow"}`},
		}, core.AgentEventsOptions{})
		if err == nil {
			_, err = svc.AppendAgentEvents(context.Background(), sessionID, []trove.NewSessionEvent{
				{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"You need tea."}]}`},
				{Type: trove.EventSessionStatusIdle, Body: `{"stop_reason":{"type":"end_turn"}}`},
			}, core.AgentEventsOptions{})
		}
		done <- err
	}()
	return done
}

func managedChatSession(t *testing.T, svc *core.Service, storeID string) string {
	t.Helper()
	ctx := workspaceCtx()
	a, err := svc.CreateAgent(ctx, trove.CreateAgentParams{Name: "helper", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"},
		Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset}}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := svc.CreateEnvironment(ctx, trove.CreateEnvironmentParams{Name: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := svc.CreateSession(ctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: a.ID}, EnvironmentID: env.ID,
		Stores: []trove.AttachStoreParams{{StoreID: storeID}}})
	if err != nil {
		t.Fatal(err)
	}
	return se.ID
}

// TestSessionsChat: trove sessions chat sends the message and prints the
// conversation until the turn ends, over HTTP (the event stream) and on a
// local database (WaitEvents).
func TestSessionsChat(t *testing.T) {
	for _, target := range []string{"remote", "local"} {
		t.Run(target, func(t *testing.T) {
			data, ids := localStores(t, map[string]map[string]string{"Notes": {"/todo.md": "- buy tea\n"}})
			svc, closeDB := openData(t, data)
			defer closeDB()
			id := managedChatSession(t, svc, ids["Notes"])
			args := []string{"sessions", "chat", id, "what do I need?"}
			if target == "remote" {
				_, key, err := svc.CreateKey(context.Background(), defaultWorkspace, "test")
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Events: svc, Auth: svc}))
				defer srv.Close()
				args = append(args, "--url", srv.URL, "--api-key", key)
			} else {
				args = append(args, "--data", data)
			}
			done := playTurn(t, svc, id)
			code, stdout, stderr := syncCLI(t, args...)
			if err := <-done; err != nil {
				t.Fatalf("loop: %v", err)
			}
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			want := "you: what do I need?\n[running]\n  → read {\"path\":\"/mnt/memory/notes/todo.md\"}\nagent: You need tea.\n[idle: end_turn]\n"
			if stdout != want {
				t.Errorf("stdout =\n%s\nwant\n%s", stdout, want)
			}
			// -o json: the raw events of the next turn.
			done = playTurnAfter(t, svc, id)
			code, stdout, stderr = syncCLI(t, append(args[:3:3], append([]string{"again", "-o", "json"}, args[4:]...)...)...)
			if err := <-done; err != nil {
				t.Fatalf("loop: %v", err)
			}
			if code != 0 || strings.Count(stdout, "\n") != 3 || !strings.Contains(stdout, `"type":"session.status_idle"`) || !strings.HasPrefix(stdout, `{"content":[{"text":"again","type":"text"}]`) {
				t.Errorf("-o json: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
			}
		})
	}
}

// playTurnAfter answers the next user message with a short turn.
func playTurnAfter(t *testing.T, svc *core.Service, sessionID string) chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(workspaceCtx(), 20*time.Second)
		defer cancel()
		if _, err := svc.WaitEvents(ctx, sessionID, 5); err != nil {
			done <- err
			return
		}
		_, err := svc.AppendAgentEvents(context.Background(), sessionID, []trove.NewSessionEvent{
			{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"ok"}]}`},
			{Type: trove.EventSessionStatusIdle, Body: `{"stop_reason":{"type":"end_turn"}}`},
		}, core.AgentEventsOptions{})
		done <- err
	}()
	return done
}
