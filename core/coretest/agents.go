package coretest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

// agentTests is the Managed Agents part of the suite: agents,
// environments with their keys, and the self-hosted work queue. The
// in-memory test driver of core does not model them, so RunAgents is
// separate from Run; every real driver runs both.
var agentTests = []struct {
	name string
	fn   func(t *testing.T, open Opener)
}{
	{"Agents", testAgents},
	{"AgentRefusals", testAgentRefusals},
	{"Environments", testEnvironments},
	{"EnvironmentKeys", testEnvironmentKeys},
	{"WorkQueue", testWorkQueue},
	{"WorkReclaim", testWorkReclaim},
	{"WorkScope", testWorkScope},
	{"WorkConcurrentPolls", testWorkConcurrentPolls},
}

// RunAgents runs the Managed Agents conformance tests over drivers opened
// by open, in parallel.
func RunAgents(t *testing.T, open Opener) {
	t.Helper()
	for _, tc := range agentTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

func testAgents(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	schema := []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	a, err := e.svc.CreateAgent(e.ctx, trove.CreateAgentParams{
		Name: "Researcher", Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}, System: "Be brief.",
		Tools: []trove.AgentToolParams{
			{Type: trove.ToolAgentToolset, Configs: []trove.ToolConfigParams{{Name: trove.ToolBash, Enabled: ptr(false)}, {Name: trove.ToolWrite, PermissionPolicy: trove.PolicyAlwaysAsk}}},
			{Type: trove.ToolCustom, Name: "get_weather", Description: "Weather for a city", InputSchema: schema},
		},
		Metadata: map[string]string{"team": "a"},
	})
	if err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}
	if !strings.HasPrefix(a.ID, trove.PrefixAgent) || a.Version != 1 || a.Model != (trove.AgentModel{ID: "claude-sonnet-4-6", Speed: "standard", Effort: "high"}) {
		t.Fatalf("created %+v", a)
	}
	wantConfigs := []trove.ToolConfig{
		{Name: "bash", Enabled: false, PermissionPolicy: trove.PolicyAlwaysAllow},
		{Name: "write", Enabled: true, PermissionPolicy: trove.PolicyAlwaysAsk},
		{Name: "web_fetch", Enabled: false, PermissionPolicy: trove.PolicyAlwaysAllow},
		{Name: "web_search", Enabled: false, PermissionPolicy: trove.PolicyAlwaysAllow},
	}
	if diff := cmp.Diff(wantConfigs, a.Tools[0].Configs); diff != "" {
		t.Errorf("resolved configs (-want +got):\n%s", diff)
	}
	var enabled []string
	for _, c := range a.EnabledTools() {
		enabled = append(enabled, c.Name)
	}
	if diff := cmp.Diff([]string{"edit", "read", "write", "glob", "grep"}, enabled); diff != "" {
		t.Errorf("EnabledTools (-want +got):\n%s", diff)
	}
	if string(a.Tools[1].InputSchema) != string(schema) {
		t.Errorf("input schema = %s", a.Tools[1].InputSchema)
	}
	got, err := e.svc.GetAgent(e.ctx, a.ID, 0)
	if err != nil {
		t.Fatalf("GetAgent: %v", err)
	}
	if diff := cmp.Diff(a, got); diff != "" {
		t.Errorf("GetAgent (-created +got):\n%s", diff)
	}

	// An update makes version 2; the same update again changes nothing.
	up := trove.UpdateAgentParams{Version: 1, System: ptr("Be thorough."), Metadata: map[string]*string{"team": nil, "env": ptr("prod")}}
	a2, err := e.svc.UpdateAgent(e.ctx, a.ID, up)
	if err != nil {
		t.Fatalf("UpdateAgent: %v", err)
	}
	if a2.Version != 2 || a2.System != "Be thorough." || !cmp.Equal(a2.Metadata, map[string]string{"env": "prod"}) || !a2.UpdatedAt.After(a.UpdatedAt) {
		t.Fatalf("updated %+v", a2)
	}
	same, err := e.svc.UpdateAgent(e.ctx, a.ID, trove.UpdateAgentParams{System: ptr("Be thorough.")})
	if err != nil || same.Version != 2 {
		t.Fatalf("no-op update: %+v, %v", same, err)
	}
	_, err = e.svc.UpdateAgent(e.ctx, a.ID, up) // version 1 is stale
	wantCode(t, "stale version", err, trove.ECONFLICT)
	v1, err := e.svc.GetAgent(e.ctx, a.ID, 1)
	if err != nil || v1.System != "Be brief." || v1.Version != 1 {
		t.Fatalf("GetAgent v1: %+v, %v", v1, err)
	}
	_, err = e.svc.GetAgent(e.ctx, a.ID, 3)
	wantCode(t, "version 3", err, trove.ENOTFOUND)

	// Versions, newest first, one per page.
	var versions []int64
	cursor := ""
	for range 5 {
		pg, err := e.svc.ListAgentVersions(e.ctx, a.ID, trove.ListAgentVersionsParams{Limit: 1, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListAgentVersions: %v", err)
		}
		for _, v := range pg.Data {
			versions = append(versions, v.Version)
		}
		if cursor = pg.NextPage; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff([]int64{2, 1}, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	// Archive: one-way, idempotent, no new version; archived agents are
	// listed only on request and cannot be updated.
	b, err := e.svc.CreateAgent(e.ctx, trove.CreateAgentParams{Name: "Other", Model: trove.AgentModelParams{ID: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	arch, err := e.svc.ArchiveAgent(e.ctx, a.ID)
	if err != nil || arch.ArchivedAt == nil || arch.Version != 2 {
		t.Fatalf("ArchiveAgent: %+v, %v", arch, err)
	}
	again, err := e.svc.ArchiveAgent(e.ctx, a.ID)
	if err != nil || !again.ArchivedAt.Equal(*arch.ArchivedAt) {
		t.Fatalf("ArchiveAgent again: %+v, %v", again, err)
	}
	_, err = e.svc.UpdateAgent(e.ctx, a.ID, trove.UpdateAgentParams{Name: ptr("x")})
	wantCode(t, "update archived", err, trove.EINVALID)
	pg, err := e.svc.ListAgents(e.ctx, trove.ListAgentsParams{})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != b.ID {
		t.Fatalf("ListAgents: %+v, %v", pg, err)
	}
	pg, err = e.svc.ListAgents(e.ctx, trove.ListAgentsParams{IncludeArchived: true, Limit: 1})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != b.ID || pg.NextPage == "" {
		t.Fatalf("ListAgents page 1: %+v, %v", pg, err)
	}
	pg, err = e.svc.ListAgents(e.ctx, trove.ListAgentsParams{IncludeArchived: true, Limit: 1, Cursor: pg.NextPage})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != a.ID || pg.Data[0].Version != 2 {
		t.Fatalf("ListAgents page 2: %+v, %v", pg, err)
	}

	// Other workspaces see nothing; scoped credentials are refused.
	_, err = e.svc.GetAgent(e.ctxB, a.ID, 0)
	wantCode(t, "other workspace", err, trove.ENOTFOUND)
	sctx, _, _ := e.sessionCtx(t)
	_, err = e.svc.ListAgents(sctx, trove.ListAgentsParams{})
	wantCode(t, "session credential", err, trove.EFORBIDDEN)
}

func testAgentRefusals(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	model := trove.AgentModelParams{ID: "claude-sonnet-4-6"}
	obj := []byte(`{"type":"object"}`)
	cases := []struct {
		name  string
		p     trove.CreateAgentParams
		field string
	}{
		{"empty name", trove.CreateAgentParams{Model: model}, "name"},
		{"long name", trove.CreateAgentParams{Name: strings.Repeat("n", 257), Model: model}, "name"},
		{"no model", trove.CreateAgentParams{Name: "a"}, "model.id"},
		{"fast", trove.CreateAgentParams{Name: "a", Model: trove.AgentModelParams{ID: "m", Speed: "fast"}}, "model.speed"},
		{"bad effort", trove.CreateAgentParams{Name: "a", Model: trove.AgentModelParams{ID: "m", Effort: "huge"}}, "model.effort"},
		{"long system", trove.CreateAgentParams{Name: "a", Model: model, System: strings.Repeat("s", 100001)}, "system"},
		{"long description", trove.CreateAgentParams{Name: "a", Model: model, Description: strings.Repeat("d", 2049)}, "description"},
		{"two toolsets", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset}, {Type: trove.ToolAgentToolset}}}, "tools[1].type"},
		{"mcp toolset", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: "mcp_toolset"}}}, "tools[0].type"},
		{"unknown tool", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset, Configs: []trove.ToolConfigParams{{Name: "browser"}}}}}, "tools[0].configs[0].name"},
		{"web_fetch on", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset, Configs: []trove.ToolConfigParams{{Name: "web_fetch"}}}}}, "tools[0].configs[0]"},
		{"auto policy", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset, DefaultPolicy: "auto"}}}, "tools[0].default_config.permission_policy"},
		{"custom bad name", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolCustom, Name: "a b", Description: "d", InputSchema: obj}}}, "tools[0].name"},
		{"custom twice", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolCustom, Name: "x", Description: "d", InputSchema: obj}, {Type: trove.ToolCustom, Name: "x", Description: "d", InputSchema: obj}}}, "tools[1].name"},
		{"custom shadows toolset", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolCustom, Name: "bash", Description: "d", InputSchema: obj}}}, "tools[0].name"},
		{"custom no description", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolCustom, Name: "x", InputSchema: obj}}}, "tools[0].description"},
		{"schema not object", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolCustom, Name: "x", Description: "d", InputSchema: []byte(`{"type":"string"}`)}}}, "tools[0].input_schema.type"},
		{"schema not json", trove.CreateAgentParams{Name: "a", Model: model, Tools: []trove.AgentToolParams{{Type: trove.ToolCustom, Name: "x", Description: "d", InputSchema: []byte(`[`)}}}, "tools[0].input_schema"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.svc.CreateAgent(e.ctx, tc.p)
			wantCode(t, tc.name, err, trove.EINVALID)
			if !strings.HasPrefix(trove.ErrorMessage(err), tc.field+":") {
				t.Errorf("message %q does not start with %q", trove.ErrorMessage(err), tc.field+":")
			}
		})
	}
	md := map[string]string{}
	for i := range 17 {
		md[strings.Repeat("k", i+1)] = "v"
	}
	_, err := e.svc.CreateAgent(e.ctx, trove.CreateAgentParams{Name: "a", Model: model, Metadata: md})
	wantCode(t, "17 metadata pairs", err, trove.EINVALID)
	pg, err := e.svc.ListAgents(e.ctx, trove.ListAgentsParams{IncludeArchived: true})
	if err != nil || len(pg.Data) != 0 {
		t.Fatalf("refused creates left agents: %+v, %v", pg, err)
	}
}

func testEnvironments(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	_, err := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "c", Type: "cloud"})
	wantCode(t, "cloud", err, trove.EINVALID)
	if !strings.HasPrefix(trove.ErrorMessage(err), "config.type:") {
		t.Errorf("cloud refusal = %q", trove.ErrorMessage(err))
	}
	env, err := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "laptop", Description: ptr("mine"), Metadata: map[string]string{"a": "1"}})
	if err != nil || env.Type != trove.EnvironmentSelfHosted || !strings.HasPrefix(env.ID, trove.PrefixEnv) {
		t.Fatalf("CreateEnvironment: %+v, %v", env, err)
	}
	up, err := e.svc.UpdateEnvironment(e.ctx, env.ID, trove.UpdateEnvironmentParams{ClearDescription: true, Metadata: map[string]*string{"a": ptr(""), "b": ptr("2")}})
	if err != nil || up.Description != nil || !cmp.Equal(up.Metadata, map[string]string{"b": "2"}) {
		t.Fatalf("UpdateEnvironment: %+v, %v", up, err)
	}
	got, err := e.svc.GetEnvironment(e.ctx, env.ID)
	if err != nil || !cmp.Equal(got, up) {
		t.Fatalf("GetEnvironment: %+v, %v", got, err)
	}
	_, err = e.svc.GetEnvironment(e.ctxB, env.ID)
	wantCode(t, "other workspace", err, trove.ENOTFOUND)
	// Live work blocks deletion; stopped work does not.
	sctx, se, _ := e.sessionCtx(t)
	_ = sctx
	w, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID)
	if err != nil {
		t.Fatalf("EnqueueSessionWork: %v", err)
	}
	wantCode(t, "delete with live work", e.svc.DeleteEnvironment(e.ctx, env.ID), trove.ECONFLICT)
	if _, err := e.svc.StopWork(e.ctx, env.ID, w.ID, true); err != nil {
		t.Fatalf("StopWork: %v", err)
	}
	arch, err := e.svc.ArchiveEnvironment(e.ctx, env.ID)
	if err != nil || arch.ArchivedAt == nil {
		t.Fatalf("ArchiveEnvironment: %+v, %v", arch, err)
	}
	_, err = e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID)
	wantCode(t, "enqueue in archived environment", err, trove.EINVALID)
	pg, err := e.svc.ListEnvironments(e.ctx, trove.ListEnvironmentsParams{})
	if err != nil || len(pg.Data) != 0 {
		t.Fatalf("ListEnvironments without archived: %+v, %v", pg, err)
	}
	if err := e.svc.DeleteEnvironment(e.ctx, env.ID); err != nil {
		t.Fatalf("DeleteEnvironment: %v", err)
	}
	_, err = e.svc.GetEnvironment(e.ctx, env.ID)
	wantCode(t, "get deleted", err, trove.ENOTFOUND)
}

func testEnvironmentKeys(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	env, err := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	k, secret, err := e.svc.CreateEnvironmentKey(e.ctx, env.ID, "worker 1")
	if err != nil || !strings.HasPrefix(secret, "trove_ek_") || k.Hint != secret[len(secret)-4:] {
		t.Fatalf("CreateEnvironmentKey: %+v, %v", k, err)
	}
	p, err := e.svc.Authenticate(context.Background(), secret)
	if err != nil || p.Environment == nil || p.Environment.EnvironmentID != env.ID || p.Session == nil || len(p.Session.Stores) != 0 {
		t.Fatalf("Authenticate(environment key): %+v, %v", p, err)
	}
	ectx := trove.WithPrincipal(context.Background(), p)
	// The key reaches its queue and nothing else.
	if _, err := e.svc.WorkStats(ectx, env.ID); err != nil {
		t.Fatalf("WorkStats with the key: %v", err)
	}
	s := e.store(t, "private")
	_, err = e.svc.GetStore(ectx, s.ID)
	if c := trove.ErrorCode(err); c != trove.ENOTFOUND && c != trove.EFORBIDDEN {
		t.Fatalf("GetStore with an environment key: %v", err)
	}
	_, err = e.svc.ListAgents(ectx, trove.ListAgentsParams{})
	wantCode(t, "agents with an environment key", err, trove.EFORBIDDEN)
	_, _, err = e.svc.CreateEnvironmentKey(ectx, env.ID, "")
	wantCode(t, "key minting a key", err, trove.EFORBIDDEN)
	other, _ := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "other"})
	_, err = e.svc.PollWork(ectx, other.ID, trove.PollWorkParams{})
	wantCode(t, "another environment's queue", err, trove.EFORBIDDEN)

	keys, err := e.svc.ListEnvironmentKeys(e.ctx, env.ID)
	if err != nil || len(keys) != 1 || keys[0].ID != k.ID {
		t.Fatalf("ListEnvironmentKeys: %+v, %v", keys, err)
	}
	rk, err := e.svc.RevokeEnvironmentKey(e.ctx, env.ID, k.ID)
	if err != nil || rk.RevokedAt == nil {
		t.Fatalf("RevokeEnvironmentKey: %+v, %v", rk, err)
	}
	_, err = e.svc.Authenticate(context.Background(), secret)
	wantCode(t, "revoked key", err, trove.EUNAUTHENTICATED)
	// A poll by a principal authenticated before the revocation stops too.
	_, err = e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{})
	wantCode(t, "poll with a revoked key", err, trove.EUNAUTHENTICATED)
	_, err = e.svc.RevokeEnvironmentKey(e.ctx, other.ID, k.ID)
	wantCode(t, "revoke via another environment", err, trove.ENOTFOUND)
}

// envKeyCtx makes an environment and a context acting as its key.
func (e *env) envKeyCtx(t *testing.T) (*trove.Environment, context.Context) {
	t.Helper()
	env, err := e.svc.CreateEnvironment(e.ctx, trove.CreateEnvironmentParams{Name: "worker host"})
	if err != nil {
		t.Fatal(err)
	}
	_, secret, err := e.svc.CreateEnvironmentKey(e.ctx, env.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	return env, trove.WithPrincipal(context.Background(), p)
}

// sessionsToken decodes a work secret as lib/environments does.
func sessionsToken(t *testing.T, secret string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(secret)
	if err != nil {
		t.Fatalf("secret is not unpadded base64url: %v", err)
	}
	var p struct {
		SessionsToken string `json:"sessions_token"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.SessionsToken == "" {
		t.Fatalf("secret payload %s: %v", raw, err)
	}
	return p.SessionsToken
}

func testWorkQueue(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	env, ectx := e.envKeyCtx(t)
	s := e.store(t, "notes")
	other := e.store(t, "other")
	_, se, _ := e.sessionCtx(t, trove.AttachStoreParams{StoreID: s.ID, Access: trove.AccessReadOnly})
	w, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID)
	if err != nil || w.State != trove.WorkQueued || w.SessionID != se.ID {
		t.Fatalf("EnqueueSessionWork: %+v, %v", w, err)
	}
	w2, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID)
	if err != nil || w2.ID != w.ID {
		t.Fatalf("second enqueue made %+v (%v), want the live item %s", w2, err, w.ID)
	}
	st, err := e.svc.WorkStats(ectx, env.ID)
	if err != nil || st.Depth != 1 || st.Pending != 0 || st.OldestQueuedAt == nil {
		t.Fatalf("WorkStats: %+v, %v", st, err)
	}

	got, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{WorkerID: "w1"})
	if err != nil || got == nil || got.ID != w.ID || got.Secret == "" {
		t.Fatalf("PollWork: %+v, %v", got, err)
	}
	if again, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{}); err != nil || again != nil {
		t.Fatalf("second poll: %+v, %v; want nothing", again, err)
	}
	st, _ = e.svc.WorkStats(ectx, env.ID)
	if st.Depth != 0 || st.Pending != 1 || st.WorkersPolling != 1 {
		t.Fatalf("WorkStats after poll: %+v", st)
	}

	// The secret's token acts as the session: its store only, read-only.
	token := sessionsToken(t, got.Secret)
	tp, err := e.svc.Authenticate(context.Background(), token)
	if err != nil || tp.Session == nil || tp.Session.SessionID != se.ID || tp.Actor.Type != trove.ActorSession {
		t.Fatalf("Authenticate(work token): %+v, %v", tp, err)
	}
	tctx := trove.WithPrincipal(context.Background(), tp)
	if _, err := e.svc.GetStore(tctx, s.ID); err != nil {
		t.Fatalf("token reading its store: %v", err)
	}
	_, err = e.svc.CreateMemory(tctx, s.ID, trove.CreateMemoryParams{Path: "/x.md", Content: "x"})
	wantCode(t, "token writing a read_only store", err, trove.EFORBIDDEN)
	_, err = e.svc.GetStore(tctx, other.ID)
	if c := trove.ErrorCode(err); c != trove.ENOTFOUND && c != trove.EFORBIDDEN {
		t.Fatalf("token reading another store: %v", err)
	}
	_, err = e.svc.GetEnvironment(tctx, env.ID)
	wantCode(t, "token reading the environment", err, trove.EFORBIDDEN)
	_, err = e.svc.PollWork(tctx, env.ID, trove.PollWorkParams{})
	wantCode(t, "token polling", err, trove.EFORBIDDEN)

	// Ack, then the lease: the first beat claims it with NO_HEARTBEAT.
	acked, err := e.svc.AckWork(ectx, env.ID, w.ID)
	if err != nil || acked.State != trove.WorkStarting || acked.AcknowledgedAt == nil {
		t.Fatalf("AckWork: %+v, %v", acked, err)
	}
	l, err := e.svc.HeartbeatWork(tctx, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: trove.NoHeartbeat, DesiredTTL: time.Minute})
	if err != nil || !l.LeaseExtended || l.State != trove.WorkActive || l.TTL != time.Minute || l.LastHeartbeat == "" {
		t.Fatalf("first heartbeat: %+v, %v", l, err)
	}
	_, err = e.svc.HeartbeatWork(tctx, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: trove.NoHeartbeat})
	wantCode(t, "a second NO_HEARTBEAT", err, trove.ELEASELOST)
	var te *trove.Error
	if !errorAs(err, &te) || te.Lease == nil || te.Lease.LastHeartbeat != l.LastHeartbeat || te.Lease.State != trove.WorkActive || te.Lease.LeaseExtended {
		t.Fatalf("lease lost detail: %+v", te)
	}
	l2, err := e.svc.HeartbeatWork(tctx, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: l.LastHeartbeat})
	if err != nil || l2.LastHeartbeat == l.LastHeartbeat || l2.TTL != trove.DefaultLeaseTTL {
		t.Fatalf("second heartbeat: %+v, %v", l2, err)
	}
	meta, err := e.svc.UpdateWork(ectx, env.ID, w.ID, map[string]*string{"host": ptr("box")})
	if err != nil || meta.Metadata["host"] != "box" {
		t.Fatalf("UpdateWork: %+v, %v", meta, err)
	}

	// A stop request: the worker's next beat sees stopping (no comparison),
	// and its forced stop ends the item and the token.
	stopping, err := e.svc.StopWork(e.ctx, env.ID, w.ID, false)
	if err != nil || stopping.State != trove.WorkStopping || stopping.StopRequestedAt == nil {
		t.Fatalf("StopWork: %+v, %v", stopping, err)
	}
	l3, err := e.svc.HeartbeatWork(tctx, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: "anything"})
	if err != nil || l3.State != trove.WorkStopping || l3.LeaseExtended {
		t.Fatalf("heartbeat while stopping: %+v, %v", l3, err)
	}
	stopped, err := e.svc.StopWork(tctx, env.ID, w.ID, true)
	if err != nil || stopped.State != trove.WorkStopped || stopped.StoppedAt == nil {
		t.Fatalf("forced stop: %+v, %v", stopped, err)
	}
	_, err = e.svc.StopWork(ectx, env.ID, w.ID, true)
	wantCode(t, "stop twice", err, trove.ECONFLICT)
	_, err = e.svc.Authenticate(context.Background(), token)
	wantCode(t, "token of stopped work", err, trove.EUNAUTHENTICATED)

	// New activity queues a new item; an ended session's work is dropped
	// at the next poll.
	w3, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID)
	if err != nil || w3.ID == w.ID {
		t.Fatalf("enqueue after stop: %+v, %v", w3, err)
	}
	if _, err := e.svc.EndSession(e.ctx, se.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{}); err != nil || got != nil {
		t.Fatalf("poll with only an ended session's work: %+v, %v", got, err)
	}
	w3, err = e.svc.GetWork(ectx, env.ID, w3.ID)
	if err != nil || w3.State != trove.WorkStopped || w3.Secret != "" {
		t.Fatalf("ended session's work: %+v, %v", w3, err)
	}
	pg, err := e.svc.ListWork(ectx, env.ID, trove.ListWorkParams{Limit: 1})
	if err != nil || len(pg.Data) != 1 || pg.Data[0].ID != w3.ID || pg.NextPage == "" {
		t.Fatalf("ListWork: %+v, %v", pg, err)
	}
}

func errorAs(err error, te **trove.Error) bool {
	e, ok := err.(*trove.Error)
	if ok {
		*te = e
	}
	return ok
}

func testWorkReclaim(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	env, ectx := e.envKeyCtx(t)
	_, se, _ := e.sessionCtx(t)
	w, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Polled and never acknowledged: another poll takes it after
	// reclaim_older_than, not before.
	first, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{})
	if err != nil || first == nil {
		t.Fatalf("poll: %+v, %v", first, err)
	}
	if got, _ := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{ReclaimAfter: time.Second}); got != nil {
		t.Fatalf("reclaimed before reclaim_older_than: %+v", got)
	}
	e.clock.Advance(2 * time.Second)
	second, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{ReclaimAfter: time.Second})
	if err != nil || second == nil || second.ID != w.ID || second.Claims != 2 {
		t.Fatalf("reclaim of unacknowledged work: %+v, %v", second, err)
	}
	_, err = e.svc.Authenticate(context.Background(), sessionsToken(t, first.Secret))
	wantCode(t, "the first claim's token", err, trove.EUNAUTHENTICATED)
	tok := sessionsToken(t, second.Secret)
	tp, err := e.svc.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	tctx := trove.WithPrincipal(context.Background(), tp)
	if _, err := e.svc.AckWork(ectx, env.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	l, err := e.svc.HeartbeatWork(tctx, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: trove.NoHeartbeat, DesiredTTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The worker dies: once the lease expires the item is claimable again,
	// and the dead worker's late heartbeat is told it lost the lease.
	if got, _ := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{}); got != nil {
		t.Fatalf("claimed while the lease runs: %+v", got)
	}
	e.clock.Advance(11 * time.Second)
	third, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{})
	if err != nil || third == nil || third.ID != w.ID || third.Claims != 3 || third.StartedAt != nil {
		t.Fatalf("reclaim of an expired lease: %+v, %v", third, err)
	}
	_, err = e.svc.HeartbeatWork(tctx, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: l.LastHeartbeat})
	if c := trove.ErrorCode(err); c != trove.ELEASELOST && c != trove.EFORBIDDEN && c != trove.EUNAUTHENTICATED {
		t.Fatalf("dead worker's heartbeat: %v", err)
	}
	_, err = e.svc.Authenticate(context.Background(), tok)
	wantCode(t, "the dead worker's token", err, trove.EUNAUTHENTICATED)

	// An expired lease met by its own heartbeat (no poll in between) goes
	// back to the queue and answers lease lost.
	tp3, err := e.svc.Authenticate(context.Background(), sessionsToken(t, third.Secret))
	if err != nil {
		t.Fatal(err)
	}
	t3 := trove.WithPrincipal(context.Background(), tp3)
	if _, err := e.svc.AckWork(ectx, env.ID, w.ID); err != nil {
		t.Fatal(err)
	}
	l3, err := e.svc.HeartbeatWork(t3, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: trove.NoHeartbeat, DesiredTTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(6 * time.Second)
	_, err = e.svc.HeartbeatWork(t3, env.ID, w.ID, trove.HeartbeatParams{ExpectedLastHeartbeat: l3.LastHeartbeat})
	wantCode(t, "heartbeat after expiry", err, trove.ELEASELOST)
	got, err := e.svc.GetWork(ectx, env.ID, w.ID)
	if err != nil || got.State != trove.WorkQueued || got.PolledAt != nil {
		t.Fatalf("expired item: %+v, %v", got, err)
	}
}

func testWorkScope(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	env, ectx := e.envKeyCtx(t)
	_, se1, _ := e.sessionCtx(t)
	sctx2, se2, _ := e.sessionCtx(t)
	w1, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se2.ID); err != nil {
		t.Fatal(err)
	}
	// Session 2's credential cannot touch session 1's work.
	_, err = e.svc.GetWork(sctx2, env.ID, w1.ID)
	wantCode(t, "another session's work", err, trove.EFORBIDDEN)
	_, err = e.svc.StopWork(sctx2, env.ID, w1.ID, true)
	wantCode(t, "stopping another session's work", err, trove.EFORBIDDEN)
	_, err = e.svc.ListWork(sctx2, env.ID, trove.ListWorkParams{})
	wantCode(t, "session listing work", err, trove.EFORBIDDEN)
	// Another workspace's key sees no environment.
	_, err = e.svc.ListWork(e.ctxB, env.ID, trove.ListWorkParams{})
	wantCode(t, "other workspace", err, trove.ENOTFOUND)
	// The key and the workspace key both see everything of the queue.
	for _, ctx := range []context.Context{ectx, e.ctx} {
		pg, err := e.svc.ListWork(ctx, env.ID, trove.ListWorkParams{})
		if err != nil || len(pg.Data) != 2 {
			t.Fatalf("ListWork: %+v, %v", pg, err)
		}
	}
	// StopSessionWork ends the session's live item.
	if err := e.svc.StopSessionWork(context.Background(), se1.ID); err != nil {
		t.Fatal(err)
	}
	got, err := e.svc.GetWork(e.ctx, env.ID, w1.ID)
	if err != nil || got.State != trove.WorkStopped {
		t.Fatalf("after StopSessionWork: %+v, %v", got, err)
	}
	if live, err := e.svc.LiveSessionWork(context.Background(), se1.ID); err != nil || live != nil {
		t.Fatalf("LiveSessionWork after stop: %+v, %v", live, err)
	}
}

// testWorkConcurrentPolls: concurrent polls never hand one item to two
// workers.
func testWorkConcurrentPolls(t *testing.T, open Opener) {
	e := newEnv(t, open, trove.Limits{})
	env, ectx := e.envKeyCtx(t)
	const items = 12
	for range items {
		_, se, _ := e.sessionCtx(t)
		if _, err := e.svc.EnqueueSessionWork(context.Background(), wsA, env.ID, se.ID); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				w, err := e.svc.PollWork(ectx, env.ID, trove.PollWorkParams{ReclaimAfter: time.Hour})
				if err != nil {
					if trove.ErrorCode(err) == trove.EUNAVAILABLE {
						continue // a serialization failure: retry
					}
					t.Errorf("PollWork: %v", err)
					return
				}
				if w == nil {
					return
				}
				mu.Lock()
				seen[w.ID]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != items {
		t.Fatalf("claimed %d distinct items, want %d", len(seen), items)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("item %s claimed %d times", id, n)
		}
	}
}
