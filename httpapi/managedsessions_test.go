package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
)

// withManaged serves the agents, environments and work queue too.
func withManaged(c *httpapi.Config) {
	c.Agents, _ = c.Services.(trove.AgentService)
	c.Environments, _ = c.Services.(trove.EnvironmentService)
	c.Work, _ = c.Services.(trove.WorkService)
}

// managedFixture is an agent, a self-hosted environment and stores.
type managedFixture struct {
	agent  *trove.Agent
	env    *trove.Environment
	stores []string // store IDs: "User Preferences" ×2, then "Notes 0".."Notes 7"
}

func newManagedFixture(t *testing.T, e *testEnv) *managedFixture {
	t.Helper()
	ctx := e.ctx()
	a, err := e.svc.CreateAgent(ctx, trove.CreateAgentParams{Name: "helper", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"},
		System: "Be brief.", Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset}}})
	if err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}
	env, err := e.svc.CreateEnvironment(ctx, trove.CreateEnvironmentParams{Name: "laptop"})
	if err != nil {
		t.Fatalf("CreateEnvironment: %v", err)
	}
	f := &managedFixture{agent: a, env: env}
	for i, name := range []string{"User Preferences", "User Preferences", "Notes 0", "Notes 1", "Notes 2", "Notes 3", "Notes 4", "Notes 5", "Notes 6", "Notes 7"} {
		st, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: name, Description: "store " + strconv.Itoa(i)})
		if err != nil {
			t.Fatalf("CreateStore: %v", err)
		}
		f.stores = append(f.stores, st.ID)
	}
	return f
}

func memRes(id string, access anthropic.BetaManagedAgentsMemoryStoreResourceParamAccess, instructions string) anthropic.BetaSessionNewParamsResourceUnion {
	p := &anthropic.BetaManagedAgentsMemoryStoreResourceParam{MemoryStoreID: id, Access: access}
	if instructions != "" {
		p.Instructions = anthropic.String(instructions)
	}
	return anthropic.BetaSessionNewParamsResourceUnion{OfMemoryStore: p}
}

func userText(text string) anthropic.BetaManagedAgentsEventParamsUnion {
	return anthropic.BetaManagedAgentsEventParamsUnion{OfUserMessage: &anthropic.BetaManagedAgentsUserMessageEventParams{
		Content: []anthropic.BetaManagedAgentsUserMessageEventParamsContentUnion{{OfText: &anthropic.BetaManagedAgentsTextBlockParam{Text: text}}}}}
}

func TestSDKManagedSessions(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testSDKManagedSessions(t, newEnv(t, netHTTP, withManaged))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testSDKManagedSessions(t, newPostgresEnv(t, netHTTP, withManaged))
	})
}

func testSDKManagedSessions(t *testing.T, e *testEnv) {
	c := e.sdk()
	ctx := context.Background()
	f := newManagedFixture(t, e)

	sessionCount := func() int {
		t.Helper()
		page, err := c.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{IncludeArchived: anthropic.Bool(true), Limit: anthropic.Int(100)})
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		return len(page.Data)
	}

	// The documentation's call: two stores whose names share a slug.
	se, err := c.Beta.Sessions.New(ctx, anthropic.BetaSessionNewParams{
		Agent:         anthropic.BetaSessionNewParamsAgentUnion{OfString: anthropic.String(f.agent.ID)},
		EnvironmentID: f.env.ID,
		Title:         anthropic.String("first"),
		Metadata:      map[string]string{"k": "v"},
		Resources: []anthropic.BetaSessionNewParamsResourceUnion{
			memRes(f.stores[0], anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadWrite, "Keep it tidy."),
			memRes(f.stores[1], anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadOnly, ""),
		},
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if !strings.HasPrefix(se.ID, "sesn_") || se.Status != "idle" || se.Title != "first" || se.Metadata["k"] != "v" ||
		se.EnvironmentID != f.env.ID || se.Agent.ID != f.agent.ID || se.Agent.Version != 1 || se.Agent.System != "Be brief." {
		t.Fatalf("created session = %s", se.RawJSON())
	}
	if len(se.Resources) != 2 {
		t.Fatalf("resources = %d, want 2", len(se.Resources))
	}
	r0, r1 := se.Resources[0].AsMemoryStore(), se.Resources[1].AsMemoryStore()
	if r0.MountPath != "/mnt/memory/user-preferences" || r1.MountPath != "/mnt/memory/user-preferences-2" ||
		r0.Access != "read_write" || r1.Access != "read_only" || r0.Instructions != "Keep it tidy." || r0.Name != "User Preferences" {
		t.Errorf("resources = %s", se.JSON.Resources.Raw())
	}
	raw := rawKeys(t, se.RawJSON())
	for _, k := range []string{"type", "id", "status", "created_at", "updated_at", "environment_id", "title", "metadata", "agent",
		"resources", "vault_ids", "outcome_evaluations", "usage", "stats", "archived_at", "budget"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("session JSON lacks %q", k)
		}
	}

	// A new agent version does not change the session; a pinned version.
	if _, err := e.svc.UpdateAgent(e.ctx(), f.agent.ID, trove.UpdateAgentParams{Version: 1, System: ptr("v2")}); err != nil {
		t.Fatalf("UpdateAgent: %v", err)
	}
	got, err := c.Beta.Sessions.Get(ctx, se.ID, anthropic.BetaSessionGetParams{})
	if err != nil || got.Agent.Version != 1 || got.Agent.System != "Be brief." {
		t.Fatalf("Get after agent update = %v, %v", got, err)
	}
	pinned, err := c.Beta.Sessions.New(ctx, anthropic.BetaSessionNewParams{
		Agent:         anthropic.BetaSessionNewParamsAgentUnion{OfBetaManagedAgentsAgents: &anthropic.BetaManagedAgentsAgentParams{ID: f.agent.ID, Version: anthropic.Int(1)}},
		EnvironmentID: f.env.ID,
	})
	if err != nil || pinned.Agent.Version != 1 {
		t.Fatalf("New pinned = %v, %v", pinned, err)
	}
	latest, err := c.Beta.Sessions.New(ctx, anthropic.BetaSessionNewParams{
		Agent: anthropic.BetaSessionNewParamsAgentUnion{OfString: anthropic.String(f.agent.ID)}, EnvironmentID: f.env.ID,
		InitialEvents: []anthropic.BetaSessionNewParamsInitialEventUnion{{OfUserMessage: &anthropic.BetaManagedAgentsUserMessageEventParams{
			Content: []anthropic.BetaManagedAgentsUserMessageEventParamsContentUnion{{OfText: &anthropic.BetaManagedAgentsTextBlockParam{Text: "hi"}}}}}},
	})
	if err != nil || latest.Agent.Version != 2 || latest.Agent.System != "v2" {
		t.Fatalf("New latest = %v, %v", latest, err)
	}
	evs, err := c.Beta.Sessions.Events.List(ctx, latest.ID, anthropic.BetaSessionEventListParams{})
	if err != nil || len(evs.Data) != 1 || evs.Data[0].Type != "user.message" {
		t.Fatalf("initial events = %v, %v", evs, err)
	}

	// Refusals: a 4xx envelope naming the problem, nothing created.
	before := sessionCount()
	archivedAgent, err := e.svc.CreateAgent(e.ctx(), trove.CreateAgentParams{Name: "old", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ArchiveAgent(e.ctx(), archivedAgent.ID); err != nil {
		t.Fatal(err)
	}
	archivedEnv, err := e.svc.CreateEnvironment(e.ctx(), trove.CreateEnvironmentParams{Name: "old"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ArchiveEnvironment(e.ctx(), archivedEnv.ID); err != nil {
		t.Fatal(err)
	}
	archivedStore, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.ArchiveStore(e.ctx(), archivedStore.ID); err != nil {
		t.Fatal(err)
	}
	nine := make([]anthropic.BetaSessionNewParamsResourceUnion, 0, 9)
	for _, id := range f.stores[1:10] {
		nine = append(nine, memRes(id, "", ""))
	}
	agentRef := anthropic.BetaSessionNewParamsAgentUnion{OfString: anthropic.String(f.agent.ID)}
	refusals := []struct {
		name   string
		p      anthropic.BetaSessionNewParams
		status int
		typ    string
		want   string
	}{
		{"unknown agent", anthropic.BetaSessionNewParams{Agent: anthropic.BetaSessionNewParamsAgentUnion{OfString: anthropic.String("agent_nope")}, EnvironmentID: f.env.ID}, 404, "not_found_error", "agent_nope"},
		{"unknown agent version", anthropic.BetaSessionNewParams{Agent: anthropic.BetaSessionNewParamsAgentUnion{OfBetaManagedAgentsAgents: &anthropic.BetaManagedAgentsAgentParams{ID: f.agent.ID, Version: anthropic.Int(9)}}, EnvironmentID: f.env.ID}, 404, "not_found_error", "version 9"},
		{"archived agent", anthropic.BetaSessionNewParams{Agent: anthropic.BetaSessionNewParamsAgentUnion{OfString: anthropic.String(archivedAgent.ID)}, EnvironmentID: f.env.ID}, 400, "invalid_request_error", "archived"},
		{"unknown environment", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: "env_nope"}, 404, "not_found_error", "env_nope"},
		{"archived environment", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: archivedEnv.ID}, 400, "invalid_request_error", "archived"},
		{"unknown store", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: []anthropic.BetaSessionNewParamsResourceUnion{memRes("memstore_nope", "", "")}}, 404, "not_found_error", "memstore_nope"},
		{"archived store", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: []anthropic.BetaSessionNewParamsResourceUnion{memRes(archivedStore.ID, "", "")}}, 400, "invalid_request_error", "archived"},
		{"ninth store", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: nine}, 400, "invalid_request_error", "at most 8"},
		{"same store twice", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: []anthropic.BetaSessionNewParamsResourceUnion{memRes(f.stores[0], "", ""), memRes(f.stores[0], "", "")}}, 400, "invalid_request_error", "more than once"},
		{"instructions over 4096", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: []anthropic.BetaSessionNewParamsResourceUnion{memRes(f.stores[0], "", strings.Repeat("é", 4097))}}, 400, "invalid_request_error", "4096"},
		{"file resource", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: []anthropic.BetaSessionNewParamsResourceUnion{{OfFile: &anthropic.BetaManagedAgentsFileResourceParams{FileID: "file_1"}}}}, 400, "invalid_request_error", "only memory_store"},
		{"github resource", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, Resources: []anthropic.BetaSessionNewParamsResourceUnion{{OfGitHubRepository: &anthropic.BetaManagedAgentsGitHubRepositoryResourceParams{URL: "https://github.com/a/b"}}}}, 400, "invalid_request_error", "only memory_store"},
		{"vaults", anthropic.BetaSessionNewParams{Agent: agentRef, EnvironmentID: f.env.ID, VaultIDs: []string{"vlt_1"}}, 400, "invalid_request_error", "vault_ids"},
		{"overrides", anthropic.BetaSessionNewParams{Agent: anthropic.BetaSessionNewParamsAgentUnion{OfBetaManagedAgentsAgentWithOverridess: &anthropic.BetaManagedAgentsAgentWithOverridesParams{ID: f.agent.ID, System: anthropic.String("x")}}, EnvironmentID: f.env.ID}, 400, "invalid_request_error", "agent_with_overrides"},
	}
	for _, tc := range refusals {
		t.Run("refuse/"+tc.name, func(t *testing.T) {
			_, err := c.Beta.Sessions.New(ctx, tc.p)
			apierr := wantAPIError(t, err, tc.status, tc.typ)
			if !strings.Contains(apierr.RawJSON(), tc.want) {
				t.Errorf("error = %s, want it to mention %q", apierr.RawJSON(), tc.want)
			}
		})
	}
	if n := sessionCount(); n != before {
		t.Errorf("sessions after the refusals = %d, want %d (nothing half-created)", n, before)
	}

	// Strict bodies: a mis-cased member is refused.
	managedBeta := map[string]string{"anthropic-beta": httpapi.BetaManagedAgents}
	res := e.do(t, rawReq{method: http.MethodPost, path: "/v1/sessions", body: `{"Agent":"` + f.agent.ID + `","environment_id":"` + f.env.ID + `"}`, header: managedBeta})
	checkEnvelope(t, "mis-cased member", res, 400, "invalid_request_error")

	// List with the SDK's filters.
	byStore, err := c.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{MemoryStoreID: anthropic.String(f.stores[1])})
	if err != nil || len(byStore.Data) != 1 || byStore.Data[0].ID != se.ID {
		t.Errorf("List by store = %v, %v", byStore, err)
	}
	byVersion, err := c.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{AgentID: anthropic.String(f.agent.ID), AgentVersion: anthropic.Int(2)})
	if err != nil || len(byVersion.Data) != 1 || byVersion.Data[0].ID != latest.ID {
		t.Errorf("List by agent version = %v, %v", byVersion, err)
	}
	asc, err := c.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{Order: anthropic.BetaSessionListParamsOrderAsc, Limit: anthropic.Int(2)})
	if err != nil || len(asc.Data) != 2 || asc.Data[0].ID != se.ID || asc.Data[1].ID != pinned.ID || asc.NextPage == "" {
		t.Fatalf("List asc = %v, %v", asc, err)
	}
	next, err := asc.GetNextPage()
	if err != nil || next == nil || len(next.Data) != 1 || next.Data[0].ID != latest.ID {
		t.Errorf("List asc page 2 = %v, %v", next, err)
	}
	terminated, err := c.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{Statuses: []string{"terminated"}})
	if err != nil || len(terminated.Data) != 0 {
		t.Errorf("List terminated = %v, %v", terminated, err)
	}

	// Update: title and metadata; the agent cannot change.
	up, err := c.Beta.Sessions.Update(ctx, se.ID, anthropic.BetaSessionUpdateParams{Title: anthropic.String("renamed"), Metadata: map[string]string{"k2": "v2"}})
	if err != nil || up.Title != "renamed" || up.Metadata["k"] != "v" || up.Metadata["k2"] != "v2" {
		t.Errorf("Update = %v, %v", up, err)
	}

	// Resources: read by store ID; no change after creation.
	rl, err := c.Beta.Sessions.Resources.List(ctx, se.ID, anthropic.BetaSessionResourceListParams{})
	if err != nil || len(rl.Data) != 2 || rl.Data[1].MountPath != "/mnt/memory/user-preferences-2" {
		t.Errorf("Resources.List = %v, %v", rl, err)
	}
	rg, err := c.Beta.Sessions.Resources.Get(ctx, f.stores[1], anthropic.BetaSessionResourceGetParams{SessionID: se.ID})
	if err != nil || rg.MemoryStoreID != f.stores[1] || rg.Access != "read_only" {
		t.Errorf("Resources.Get = %v, %v", rg, err)
	}
	_, err = c.Beta.Sessions.Resources.Add(ctx, se.ID, anthropic.BetaSessionResourceAddParams{BetaManagedAgentsFileResourceParams: anthropic.BetaManagedAgentsFileResourceParams{FileID: "file_1"}})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.Sessions.Resources.Delete(ctx, f.stores[0], anthropic.BetaSessionResourceDeleteParams{SessionID: se.ID})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.Sessions.Resources.Update(ctx, f.stores[0], anthropic.BetaSessionResourceUpdateParams{SessionID: se.ID, AuthorizationToken: "x"})
	wantAPIError(t, err, 400, "invalid_request_error")
	if again, err := c.Beta.Sessions.Get(ctx, se.ID, anthropic.BetaSessionGetParams{}); err != nil || len(again.Resources) != 2 {
		t.Errorf("resources after refused changes = %v, %v", again, err)
	}

	// Events: send, the loop's answer (through core), a tool result.
	sent, err := c.Beta.Sessions.Events.Send(ctx, se.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{userText("hello")}})
	if err != nil || len(sent.Data) != 1 || sent.Data[0].Type != "user.message" || !strings.HasPrefix(sent.Data[0].ID, "sevt_") {
		t.Fatalf("Send = %v, %v", sent, err)
	}
	loop, err := e.svc.AppendAgentEvents(context.Background(), se.ID, []trove.NewSessionEvent{
		{Type: trove.EventSessionStatusRunning},
		{Type: trove.EventSpanModelRequestEnd, Body: `{"model_usage":{"input_tokens":10,"output_tokens":5,"cache_creation_input_tokens":2,"cache_read_input_tokens":3},"is_error":false,"model_request_start_id":"x"}`},
		{Type: trove.EventAgentToolUse, Body: `{"name":"read","input":{"path":"/mnt/memory/user-preferences/a.md"},"evaluated_permission":"allow"}`},
		{Type: trove.EventAgentToolUse, Body: `{"name":"write","input":{},"evaluated_permission":"ask"}`},
	}, core.AgentEventsOptions{})
	if err != nil {
		t.Fatalf("AppendAgentEvents: %v", err)
	}
	running, _ := c.Beta.Sessions.Get(ctx, se.ID, anthropic.BetaSessionGetParams{})
	if running.Status != "running" || running.Usage.InputTokens != 10 || running.Usage.OutputTokens != 5 || running.Usage.CacheReadInputTokens != 3 {
		t.Errorf("session while running = %s", running.RawJSON())
	}
	toolUse, askUse := loop[2].ID, loop[3].ID
	result := func(id string) anthropic.BetaManagedAgentsEventParamsUnion {
		return anthropic.BetaManagedAgentsEventParamsUnion{OfUserToolResult: &anthropic.BetaManagedAgentsUserToolResultEventParams{ToolUseID: id,
			Content: []anthropic.BetaManagedAgentsUserToolResultEventParamsContentUnion{{OfText: &anthropic.BetaManagedAgentsTextBlockParam{Text: "ok"}}}}}
	}
	if _, err := c.Beta.Sessions.Events.Send(ctx, se.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{result(toolUse)}}); err != nil {
		t.Fatalf("Send tool result: %v", err)
	}
	eventRefusals := []struct {
		name   string
		ev     anthropic.BetaManagedAgentsEventParamsUnion
		status int
		want   string
	}{
		{"second result", result(toolUse), 409, "already has a result"},
		{"unknown tool use", result("sevt_nope"), 400, "names no agent.tool_use"},
		{"result for a message", result(sent.Data[0].ID), 400, "names no agent.tool_use"},
		{"custom result for a builtin", anthropic.BetaManagedAgentsEventParamsUnion{OfUserCustomToolResult: &anthropic.BetaManagedAgentsUserCustomToolResultEventParams{CustomToolUseID: askUse}}, 400, "agent.custom_tool_use"},
		{"confirm an allowed use", anthropic.BetaManagedAgentsEventParamsUnion{OfUserToolConfirmation: &anthropic.BetaManagedAgentsUserToolConfirmationEventParams{ToolUseID: toolUse, Result: "allow"}}, 400, "does not wait"},
		{"outcome", anthropic.BetaManagedAgentsEventParamsUnion{OfUserDefineOutcome: &anthropic.BetaManagedAgentsUserDefineOutcomeEventParams{Description: "x",
			Rubric: anthropic.BetaManagedAgentsUserDefineOutcomeEventParamsRubricUnion{OfText: &anthropic.BetaManagedAgentsTextRubricParams{Content: "x"}}}}, 400, "user.define_outcome"},
		{"system message", anthropic.BetaManagedAgentsEventParamsUnion{OfSystemMessage: &anthropic.BetaManagedAgentsSystemMessageEventParams{
			Content: []anthropic.BetaManagedAgentsSystemContentBlockParam{{Text: "x"}}}}, 400, "system.message"},
	}
	for _, tc := range eventRefusals {
		t.Run("refuse event/"+tc.name, func(t *testing.T) {
			_, err := c.Beta.Sessions.Events.Send(ctx, se.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{tc.ev}})
			apierr := wantAPIError(t, err, tc.status, map[int]string{400: "invalid_request_error", 409: "conflict_error"}[tc.status])
			if !strings.Contains(apierr.RawJSON(), tc.want) {
				t.Errorf("error = %s, want it to mention %q", apierr.RawJSON(), tc.want)
			}
		})
	}
	if _, err := c.Beta.Sessions.Events.Send(ctx, se.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{
		{OfUserToolConfirmation: &anthropic.BetaManagedAgentsUserToolConfirmationEventParams{ToolUseID: askUse, Result: "deny", DenyMessage: anthropic.String("no")}}}}); err != nil {
		t.Fatalf("Send confirmation: %v", err)
	}
	res = e.do(t, rawReq{method: http.MethodPost, path: "/v1/sessions/" + se.ID + "/events", body: `{"events":[{"type":"user.message","Content":[{"type":"text","text":"x"}]}]}`, header: managedBeta})
	checkEnvelope(t, "mis-cased event member", res, 400, "invalid_request_error")
	if _, err := e.svc.AppendAgentEvents(context.Background(), se.ID, []trove.NewSessionEvent{
		{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"done"}]}`},
		{Type: trove.EventSessionStatusIdle, Body: `{"stop_reason":{"type":"end_turn"}}`},
	}, core.AgentEventsOptions{}); err != nil {
		t.Fatal(err)
	}

	// The transcript, paged in order, both ways, filtered by type.
	var all []string
	for page, err := c.Beta.Sessions.Events.List(ctx, se.ID, anthropic.BetaSessionEventListParams{Limit: anthropic.Int(3), Order: anthropic.BetaSessionEventListParamsOrderAsc}); ; page, err = page.GetNextPage() {
		if err != nil {
			t.Fatalf("Events.List: %v", err)
		}
		if page == nil {
			break
		}
		for _, ev := range page.Data {
			all = append(all, ev.Type)
		}
		if len(page.Data) == 0 {
			break
		}
	}
	wantTypes := "user.message session.status_running span.model_request_end agent.tool_use agent.tool_use user.tool_result user.tool_confirmation agent.message session.status_idle"
	if strings.Join(all, " ") != wantTypes {
		t.Errorf("transcript = %v, want %s", all, wantTypes)
	}
	desc, err := c.Beta.Sessions.Events.List(ctx, se.ID, anthropic.BetaSessionEventListParams{Order: anthropic.BetaSessionEventListParamsOrderDesc, Limit: anthropic.Int(1), Types: []anthropic.BetaManagedAgentsSessionEventType{"agent.tool_use"}})
	if err != nil || len(desc.Data) != 1 || desc.Data[0].ID != askUse {
		t.Errorf("newest tool use = %v, %v", desc, err)
	}
	// Several types: the SDK repeats types[]; a list, not a repeated parameter.
	two, err := c.Beta.Sessions.Events.List(ctx, se.ID, anthropic.BetaSessionEventListParams{Types: []anthropic.BetaManagedAgentsSessionEventType{"user.message", "agent.message"}})
	if err != nil || len(two.Data) != 2 || two.Data[0].Type != "user.message" || two.Data[1].Type != "agent.message" {
		t.Errorf("events of two types = %v, %v", two, err)
	}
	idle, _ := c.Beta.Sessions.Get(ctx, se.ID, anthropic.BetaSessionGetParams{})
	if idle.Status != "idle" || idle.Stats.ActiveSeconds < 0 || idle.Usage.CacheCreation.Ephemeral5mInputTokens != 2 {
		t.Errorf("idle session = %s", idle.RawJSON())
	}

	// A session token reaches its own session only, and no agent or
	// environment endpoint.
	_, token, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Agent: &trove.AgentRef{ID: f.agent.ID}, EnvironmentID: f.env.ID,
		Stores: []trove.AttachStoreParams{{StoreID: f.stores[2]}}})
	if err != nil {
		t.Fatal(err)
	}
	tc := e.sdk(option.WithAPIKey(token))
	if _, err := tc.Beta.Sessions.Get(ctx, se.ID, anthropic.BetaSessionGetParams{}); err == nil {
		t.Error("a session token read another session")
	} else {
		wantAPIError(t, err, 403, "permission_error")
	}
	_, err = tc.Beta.Sessions.Events.Send(ctx, se.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{userText("x")}})
	wantAPIError(t, err, 403, "permission_error")
	_, err = tc.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{})
	wantAPIError(t, err, 403, "permission_error")
	_, err = tc.Beta.Agents.Get(ctx, f.agent.ID, anthropic.BetaAgentGetParams{})
	if err == nil {
		t.Error("a session token read an agent")
	}
	_, err = tc.Beta.Environments.Get(ctx, f.env.ID, anthropic.BetaEnvironmentGetParams{})
	if err == nil {
		t.Error("a session token read an environment")
	}
	_, err = tc.Beta.MemoryStores.Get(ctx, f.stores[0], anthropic.BetaMemoryStoreGetParams{})
	if err == nil {
		t.Error("a session token read a store it does not have")
	}

	// Archive terminates; then no more events, and delete.
	arch, err := c.Beta.Sessions.Archive(ctx, se.ID, anthropic.BetaSessionArchiveParams{})
	if err != nil || arch.Status != "terminated" || arch.ArchivedAt.IsZero() {
		t.Fatalf("Archive = %v, %v", arch, err)
	}
	_, err = c.Beta.Sessions.Events.Send(ctx, se.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{userText("late")}})
	wantAPIError(t, err, 400, "invalid_request_error")
	if l, err := c.Beta.Sessions.List(ctx, anthropic.BetaSessionListParams{}); err != nil || len(l.Data) != before {
		t.Errorf("List without archived = %d sessions, %v; want %d (one archived, one created since)", len(l.Data), err, before)
	}
	last, _ := c.Beta.Sessions.Events.List(ctx, se.ID, anthropic.BetaSessionEventListParams{Order: anthropic.BetaSessionEventListParamsOrderDesc, Limit: anthropic.Int(1)})
	if len(last.Data) != 1 || last.Data[0].Type != "session.status_terminated" {
		t.Errorf("last event after archive = %v", last)
	}
	del, err := c.Beta.Sessions.Delete(ctx, se.ID, anthropic.BetaSessionDeleteParams{})
	if err != nil || del.ID != se.ID || del.Type != "session_deleted" {
		t.Fatalf("Delete = %v, %v", del, err)
	}
	_, err = c.Beta.Sessions.Get(ctx, se.ID, anthropic.BetaSessionGetParams{})
	wantAPIError(t, err, 404, "not_found_error")
	_, err = c.Beta.Sessions.Delete(ctx, se.ID, anthropic.BetaSessionDeleteParams{})
	wantAPIError(t, err, 404, "not_found_error")

	// Agent-less sessions are the same table: listed, and refused events
	// that need an agent.
	plain, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: f.stores[3]}}})
	if err != nil {
		t.Fatal(err)
	}
	pg, err := c.Beta.Sessions.Get(ctx, plain.ID, anthropic.BetaSessionGetParams{})
	if err != nil || pg.Status != "idle" || pg.Resources[0].AsMemoryStore().MountPath != "/mnt/memory/notes-1" {
		t.Errorf("agent-less session over /v1 = %v, %v", pg, err)
	}
	_, err = c.Beta.Sessions.Events.Send(ctx, plain.ID, anthropic.BetaSessionEventSendParams{Events: []anthropic.BetaManagedAgentsEventParamsUnion{userText("x")}})
	wantAPIError(t, err, 400, "invalid_request_error")
}

// sseEvent is one event read off a stream.
type sseEvent struct {
	id, typ string
	data    map[string]any
}

// openStream opens GET /v1/sessions/{id}/events/stream with key and
// returns the response and a reader of its events.
func openStream(t *testing.T, e *testEnv, id, key, lastID string) (*http.Response, func() (sseEvent, error)) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.url+"/v1/sessions/"+id+"/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("anthropic-beta", "managed-agents-2026-04-01")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := e.client().Do(req)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("stream: %d %s", res.StatusCode, b)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	return res, func() (sseEvent, error) {
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if ev.typ != "" {
					return ev, nil
				}
				continue
			}
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				ev.id = v
			case "event":
				ev.typ = v
			case "data":
				if err := json.Unmarshal([]byte(v), &ev.data); err != nil {
					return ev, err
				}
			}
		}
		if err := sc.Err(); err != nil {
			return ev, err
		}
		return ev, io.EOF
	}
}

// TestEventStreamResume: a stream cut mid-way and resumed with
// Last-Event-ID delivers every event exactly once, in order, while the
// loop keeps appending; and the SDK's StreamEvents reads the same stream.
func TestEventStreamResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP, withManaged)
	f := newManagedFixture(t, e)
	se, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Agent: &trove.AgentRef{ID: f.agent.ID}, EnvironmentID: f.env.ID})
	if err != nil {
		t.Fatal(err)
	}
	const total = 60
	res, next := openStream(t, e, se.ID, e.key, "")
	sdkc := e.sdk()
	sdkStream := sdkc.Beta.Sessions.Events.StreamEvents(context.Background(), se.ID, anthropic.BetaSessionEventStreamParams{})
	defer sdkStream.Close()
	done := make(chan error, 1)
	go func() {
		for i := range total {
			_, err := e.svc.AppendAgentEvents(context.Background(), se.ID, []trove.NewSessionEvent{
				{Type: trove.EventAgentMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":"m%d"}]}`, i)}}, core.AgentEventsOptions{})
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var got []string
	lastID := ""
	for len(got) < total {
		ev, err := next()
		if err != nil {
			t.Fatalf("read after %d events: %v", len(got), err)
		}
		got = append(got, ev.data["content"].([]any)[0].(map[string]any)["text"].(string))
		lastID = ev.id
		if len(got)%17 == 0 {
			// Kill the connection mid-stream and resume where it stopped.
			res.Body.Close()
			res, next = openStream(t, e, se.ID, e.key, lastID)
		}
	}
	res.Body.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, text := range got {
		if text != "m"+strconv.Itoa(i) {
			t.Fatalf("event %d = %q, want m%d (lost or repeated): %v", i, text, i, got)
		}
	}
	for i := range total {
		if !sdkStream.Next() {
			t.Fatalf("SDK stream ended after %d: %v", i, sdkStream.Err())
		}
		ev := sdkStream.Current()
		if ev.Type != "agent.message" || ev.AsAgentMessage().Content[0].Text != "m"+strconv.Itoa(i) {
			t.Fatalf("SDK event %d = %s", i, ev.RawJSON())
		}
	}
}

// TestEventStreamCredential: a stream ends within seconds of its key's
// revocation, and of its session token's session ending (after the
// session.status_terminated event).
func TestEventStreamCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP, withManaged)
	f := newManagedFixture(t, e)
	se, token, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Agent: &trove.AgentRef{ID: f.agent.ID}, EnvironmentID: f.env.ID})
	if err != nil {
		t.Fatal(err)
	}
	k, key, err := e.svc.CreateKey(context.Background(), testWorkspace, "doomed")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("revoked key", func(t *testing.T) {
		res, next := openStream(t, e, se.ID, key, "")
		defer res.Body.Close()
		start := time.Now()
		if err := e.svc.RevokeKey(context.Background(), k.ID); err != nil {
			t.Fatal(err)
		}
		ev, err := next()
		if err != nil || ev.typ != "error" {
			t.Fatalf("after revocation: %+v, %v; want an error event", ev, err)
		}
		if d := time.Since(start); d > 2*httpapi.StreamRecheck+time.Second {
			t.Errorf("stream ended %v after the revocation", d)
		}
		if _, err := next(); err != io.EOF {
			t.Errorf("stream after the error event: %v, want EOF", err)
		}
	})
	t.Run("ended session", func(t *testing.T) {
		res, next := openStream(t, e, se.ID, token, "")
		defer res.Body.Close()
		if _, err := e.svc.EndSession(e.ctx(), se.ID); err != nil {
			t.Fatal(err)
		}
		ev, err := next()
		if err != nil || ev.typ != "session.status_terminated" {
			t.Fatalf("after EndSession: %+v, %v", ev, err)
		}
		if ev, err := next(); err != io.EOF {
			t.Errorf("stream after the end: %+v %v, want EOF", ev, err)
		}
	})
}

// TestEventStreamOutlivesRequestDeadline: the event stream is long-lived,
// like the change feed's: Timeouts.Request bounds each of its database
// calls, never the stream, so an event appended after that much time still
// arrives on the stream opened before it.
func TestEventStreamOutlivesRequestDeadline(t *testing.T) {
	t.Parallel()
	const rt = 1500 * time.Millisecond
	e := newEnv(t, netHTTP, withManaged, func(c *httpapi.Config) { c.Timeouts.Request = rt })
	f := newManagedFixture(t, e)
	se, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Agent: &trove.AgentRef{ID: f.agent.ID}, EnvironmentID: f.env.ID})
	if err != nil {
		t.Fatal(err)
	}
	res, next := openStream(t, e, se.ID, e.key, "")
	defer res.Body.Close()
	opened := time.Now()
	appended := make(chan error, 1)
	go func() {
		// Past the request deadline (the stream's own clock, not a sync).
		time.Sleep(rt + time.Second)
		_, err := e.svc.AppendAgentEvents(context.Background(), se.ID, []trove.NewSessionEvent{
			{Type: trove.EventAgentMessage, Body: `{"content":[{"type":"text","text":"late"}]}`}}, core.AgentEventsOptions{})
		appended <- err
	}()
	ev, err := next()
	if err != nil {
		t.Fatalf("stream ended after %v (request deadline %v): %v", time.Since(opened), rt, err)
	}
	if got := ev.data["content"].([]any)[0].(map[string]any)["text"]; got != "late" {
		t.Fatalf("event = %v, want the late message", ev.data)
	}
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
}
