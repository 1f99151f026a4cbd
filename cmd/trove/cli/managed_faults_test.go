package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove/internal/claudetest"
)

// kill9 kills the serve process and waits until it is gone.
func (m *managed) kill9(t *testing.T) {
	t.Helper()
	if err := m.serve.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.serve.Wait()
}

// restart starts a new serve process on the killed one's address and
// data (the worker and the SDK keep their URL).
func (m *managed) restart(t *testing.T) {
	t.Helper()
	addr := strings.TrimPrefix(m.url, "http://")
	cmd, url := startServeProcessAt(t, m.bin, m.data, addr, m.flags...)
	if url != m.url {
		t.Fatalf("restarted at %s, not %s", url, m.url)
	}
	m.serve = cmd
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// waitTurnEnd waits until the transcript's last event is an idle that
// ends the turn, and returns the transcript.
func (m *managed) waitTurnEnd(t *testing.T, sessionID string) []anthropic.BetaManagedAgentsSessionEventUnion {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		evs := m.allEvents(t, sessionID)
		if n := len(evs); n > 0 && evs[n-1].Type == "session.status_idle" && evs[n-1].StopReason.Type != "requires_action" {
			return evs
		}
		if time.Now().After(deadline) {
			var types []string
			for _, e := range evs {
				types = append(types, e.Type)
			}
			t.Fatalf("the turn never ended: %s", strings.Join(types, " "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// requestsByPosition counts the model's requests per conversation
// position (assistant messages already in the request).
func requestsByPosition(reqs []claudetest.Request) map[int]int {
	out := map[int]int{}
	for _, r := range reqs {
		n := 0
		for _, m := range r.Messages {
			var role struct{ Role string }
			if json.Unmarshal(m, &role) == nil && role.Role == "assistant" {
				n++
			}
		}
		out[n]++
	}
	return out
}

// TestLongManagedSessionSurvivesKill9: kill -9 of trove serve at points of a
// turn, then a restart: the conversation completes, the model is asked
// again only for the answer that was not stored, no tool call runs twice,
// no event is lost or duplicated, the store holds the write once.
func TestLongManagedSessionSurvivesKill9(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	for _, point := range []string{"during a model request", "after an answer with a tool use is stored"} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			hold, reached := make(chan struct{}), make(chan struct{})
			inRequest := point == "during a model request"
			// holdLast keeps the last answer back until the restart: the
			// worker may post the write's result and the loop ask for the
			// last answer before the kill lands, and that answer must not
			// be stored by the process being killed.
			holdLast := make(chan struct{})
			m := newManaged(t, func(m *managed) []claudetest.Turn {
				turns := learnTurns(m)
				if inRequest {
					turns[1].Hold, turns[1].Reached = hold, reached
				} else {
					turns[2].Hold = holdLast
				}
				return turns
			})
			m.claude.AnswerByPosition()
			se := m.session(t, anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadWrite)
			m.worker(t)
			m.say(t, se.ID, "Keep a note.")
			if inRequest {
				select {
				case <-reached:
				case <-time.After(60 * time.Second):
					t.Fatal("the second model request never came")
				}
			} else {
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				stream := m.sdk.Beta.Sessions.Events.StreamEvents(ctx, se.ID, anthropic.BetaSessionEventStreamParams{})
				for stream.Next() {
					if ev := stream.Current(); ev.Type == "agent.tool_use" && ev.Name == "write" {
						break
					}
				}
				stream.Close()
				cancel()
			}
			// Kill before the held answer is let go: the answer must not
			// reach the process being killed.
			m.kill9(t)
			close(hold)
			// Requests the killed process had sent for the last answer
			// were cut before an answer came (it was held): each is asked
			// again.
			cutLast := requestsByPosition(m.claude.Requests())[2]
			m.restart(t)
			close(holdLast)
			evs := m.waitTurnEnd(t, se.ID)
			seen := map[string]bool{}
			count := map[string]int{}
			for _, ev := range evs {
				if seen[ev.ID] {
					t.Errorf("event %s (%s) twice", ev.ID, ev.Type)
				}
				seen[ev.ID] = true
				count[ev.Type]++
			}
			if count["agent.tool_use"] != 2 || count["user.tool_result"] != 2 || count["agent.message"] != 1 || count["user.message"] != 1 {
				t.Errorf("event counts %v: want 2 tool uses, 2 results, 1 reply, 1 message", count)
			}
			byPos := requestsByPosition(m.claude.Requests())
			want := map[int]int{0: 1, 1: 1, 2: 1 + cutLast}
			if inRequest {
				want[1] = 2 // the request the kill cut: its answer was never stored
			}
			for pos, n := range want {
				if byPos[pos] != n {
					t.Errorf("model requests by position %v, want %v", byPos, want)
					break
				}
			}
			mem := m.waitMemory(t, "/learned.md")
			vers := m.sdk.Beta.MemoryStores.MemoryVersions.ListAutoPaging(context.Background(), m.storeID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID)})
			n := 0
			for vers.Next() {
				n++
			}
			if n != 1 {
				t.Errorf("learned.md has %d versions, want 1", n)
			}
		})
	}
}

// TestLongManagedSessionWorkerKilled: kill -9 of a trove worker that holds the
// session's work; a second trove worker gets the work once its lease
// (--lease-ttl 5s) has run out, and the turn finishes with the store
// holding the write.
func TestLongManagedSessionWorkerKilled(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	m := newManaged(t, learnTurns)
	se := m.session(t, anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadWrite)
	// Each worker has its own --mount-root, as two hosts would: the SDK's
	// worker refuses to mount over a dead worker's leftovers.
	startWorker := func() *exec.Cmd {
		cmd := exec.Command(m.bin, "worker", "--url", m.url, "--environment", m.envID, "--environment-key", m.envKey,
			"--mount-root", t.TempDir(), "--workdir", t.TempDir(), "--max-idle", "300ms", "--lease-ttl", "5s")
		cmd.Env = append(os.Environ(), "TROVE_URL=", "ANTHROPIC_API_KEY=")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	w1 := startWorker()
	// Wait until the first worker holds the session's work (active).
	deadline := time.Now().Add(30 * time.Second)
	for {
		pg, err := m.sdk.Beta.Environments.Work.List(context.Background(), m.envID, anthropic.BetaEnvironmentWorkListParams{})
		if err != nil {
			t.Fatal(err)
		}
		active := false
		for _, w := range pg.Data {
			if w.Data.ID == se.ID && w.State == "active" {
				active = true
			}
		}
		if active {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first worker never took the session's work")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w1.Wait()
	startWorker()
	m.say(t, se.ID, "Keep a note.")
	evs := m.waitTurnEnd(t, se.ID)
	results := 0
	for _, ev := range evs {
		if ev.Type == "user.tool_result" {
			results++
		}
	}
	if results != 2 {
		t.Errorf("%d tool results, want 2", results)
	}
	if mem := m.waitMemory(t, "/learned.md"); mem.Content != "Tuesdays: green sky.\n" {
		t.Errorf("learned.md = %q", mem.Content)
	}
}
