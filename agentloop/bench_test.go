package agentloop_test

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/agentloop"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/storage/sqlite"
)

type instantRead struct{}

func (instantRead) Name() string        { return "read" }
func (instantRead) Description() string { return "read" }
func (instantRead) InputSchema() anthropic.BetaToolInputSchemaParam {
	return anthropic.BetaToolInputSchemaParam{}
}
func (instantRead) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	return []anthropic.BetaToolResultBlockParamContentUnion{{OfText: &anthropic.BetaTextBlockParam{Text: "ok"}}}, nil
}

// BenchmarkToolRoundTrip measures the time Trove adds to one tool round
// trip of a managed session, over real HTTP on loopback with SQLite: from
// the scripted model's answer (a tool use) being written, through the loop
// storing it, the SDK's SessionToolRunner seeing the agent.tool_use on its
// event stream, running an instant tool and posting the result, the loop
// claiming the run again, to the next Messages request arriving. The
// model's own latency (modelDelay) is the same-run baseline: it is
// reported as model-ms next to the added time's median and p99.
func BenchmarkToolRoundTrip(b *testing.B) {
	const modelDelay = 20 * time.Millisecond
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	svc := core.New(db, core.Options{})
	k, secret, err := svc.CreateKey(ctx, "wrkspc_bench", "bench")
	if err != nil {
		b.Fatal(err)
	}
	kctx := trove.WithPrincipal(ctx, &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: k.ID}})
	be := agentloop.NewCoreBackend(svc)
	on := true
	ag, err := svc.CreateAgent(kctx, trove.CreateAgentParams{Name: "b", Model: trove.AgentModelParams{ID: "claude-test"},
		Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset, DefaultEnabled: &on}}})
	if err != nil {
		b.Fatal(err)
	}
	en, err := svc.CreateEnvironment(kctx, trove.CreateEnvironmentParams{Name: "e"})
	if err != nil {
		b.Fatal(err)
	}
	se, _, err := svc.CreateSession(kctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: ag.ID}, EnvironmentID: en.ID})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Events: svc, Auth: svc, Agents: svc, Environments: svc, Work: svc}).HTTPServer()
	go srv.Serve(ln)
	defer srv.Close()
	claude := claudetest.New(b)
	claude.Loop(claudetest.Turn{ToolUses: []claudetest.ToolUse{{Name: "read", Input: map[string]any{"file_path": "/x"}}}, Delay: modelDelay})
	c := anthropic.NewClient(option.WithBaseURL(claude.URL), option.WithAPIKey("sk-ant-test"), option.WithMaxRetries(0))
	r := agentloop.New(agentloop.Config{Backend: be, Claude: &c, MaxRequestsPerTurn: 1 << 30})
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go r.Run(rctx)
	sdk := anthropic.NewClient(option.WithBaseURL("http://"+ln.Addr().String()), option.WithAPIKey(secret))
	noIdle := time.Duration(-1)
	runner := sdk.Beta.Sessions.Events.NewToolRunner(rctx, se.ID, anthropic.SessionToolRunnerOptions{Tools: []anthropic.BetaTool{instantRead{}}, MaxIdle: &noIdle})
	go func() {
		for runner.Next() {
		}
	}()
	defer runner.Close()

	b.ResetTimer()
	if _, err := svc.AppendEvents(kctx, se.ID, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: `{"content":[{"type":"text","text":"go"}]}`}}); err != nil {
		b.Fatal(err)
	}
	for len(claude.Requests()) < b.N+1 {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	reqs := claude.Requests()
	var added, model []float64
	for i := 1; i <= b.N; i++ {
		added = append(added, float64(reqs[i].At.Sub(reqs[i-1].Done))/1e6)
		model = append(model, float64(reqs[i-1].Done.Sub(reqs[i-1].At))/1e6)
	}
	slices.Sort(added)
	slices.Sort(model)
	pct := func(v []float64, p float64) float64 { return v[min(len(v)-1, int(float64(len(v))*p))] }
	b.ReportMetric(pct(added, 0.5), "added-p50-ms")
	b.ReportMetric(pct(added, 0.99), "added-p99-ms")
	b.ReportMetric(pct(model, 0.5), "model-p50-ms")
}
