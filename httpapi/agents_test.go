package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

func managed(r rawReq) rawReq {
	if r.header == nil {
		r.header = map[string]string{}
	}
	if _, ok := r.header["anthropic-beta"]; !ok {
		r.header["anthropic-beta"] = httpapi.BetaManagedAgents
	}
	return r
}

func TestSDKAgents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	c := e.sdk()
	ctx := context.Background()

	a, err := c.Beta.Agents.New(ctx, anthropic.BetaAgentNewParams{
		Name:   "Researcher",
		Model:  anthropic.BetaManagedAgentsModelConfigParams{ID: "claude-sonnet-4-6"},
		System: anthropic.String("Remember what the user tells you."),
		Tools: []anthropic.BetaAgentNewParamsToolUnion{
			{OfAgentToolset20260401: &anthropic.BetaManagedAgentsAgentToolset20260401Params{
				Configs: []anthropic.BetaManagedAgentsAgentToolConfigParamsUnion{
					{OfBash: &anthropic.BetaManagedAgentsBashToolConfigParams{Enabled: param.NewOpt(false)}},
				},
			}},
			{OfCustom: &anthropic.BetaManagedAgentsCustomToolParams{
				Name: "get_weather", Description: "Weather for a city",
				InputSchema: anthropic.BetaManagedAgentsCustomToolInputSchemaParam{
					Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"}},
			}},
		},
		Metadata: map[string]string{"team": "research"},
	})
	if err != nil {
		t.Fatalf("Agents.New: %v", err)
	}
	if !strings.HasPrefix(a.ID, "agent_") || a.Version != 1 || a.Type != "agent" || a.Model.ID != "claude-sonnet-4-6" ||
		a.Model.Speed != "standard" || a.System != "Remember what the user tells you." || a.Metadata["team"] != "research" {
		t.Fatalf("created agent: %s", a.RawJSON())
	}
	raw := rawKeys(t, a.RawJSON())
	for _, k := range []string{"type", "id", "version", "name", "description", "model", "system", "tools", "mcp_servers", "skills",
		"metadata", "created_at", "updated_at", "archived_at", "multiagent", "execution_identity"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("agent JSON lacks %q", k)
		}
	}
	if len(a.Tools) != 2 || a.Tools[0].Type != "agent_toolset_20260401" || !a.Tools[0].DefaultConfig.Enabled ||
		a.Tools[0].DefaultConfig.PermissionPolicy.Type != "always_allow" || a.Tools[1].Name != "get_weather" {
		t.Fatalf("tools: %s", raw["tools"])
	}
	var configs []string
	for _, cfg := range a.Tools[0].Configs.OfBetaManagedAgentsAgentToolConfigArray {
		configs = append(configs, cfg.Name+"="+map[bool]string{true: "on", false: "off"}[cfg.Enabled])
	}
	if diff := cmp.Diff([]string{"bash=off", "web_fetch=off", "web_search=off"}, configs); diff != "" {
		t.Errorf("toolset configs (-want +got):\n%s", diff)
	}
	if a.Tools[1].InputSchema.Required[0] != "city" {
		t.Errorf("input schema: %s", raw["tools"])
	}

	// Update with the version precondition: version 2; a stale one is 409.
	a2, err := c.Beta.Agents.Update(ctx, a.ID, anthropic.BetaAgentUpdateParams{Version: anthropic.Int(1), System: anthropic.String("Be brief.")})
	if err != nil || a2.Version != 2 || a2.System != "Be brief." {
		t.Fatalf("Update: %v", err)
	}
	_, err = c.Beta.Agents.Update(ctx, a.ID, anthropic.BetaAgentUpdateParams{Version: anthropic.Int(1), Name: anthropic.String("x")})
	wantAPIError(t, err, 409, "conflict_error")
	v1, err := c.Beta.Agents.Get(ctx, a.ID, anthropic.BetaAgentGetParams{Version: anthropic.Int(1)})
	if err != nil || v1.Version != 1 || v1.System != "Remember what the user tells you." {
		t.Fatalf("Get version 1: %v", err)
	}
	cur, err := c.Beta.Agents.Get(ctx, a.ID, anthropic.BetaAgentGetParams{})
	if err != nil || cur.Version != 2 {
		t.Fatalf("Get: %v", err)
	}
	var versions []int64
	for v := range c.Beta.Agents.Versions.ListAutoPaging(ctx, a.ID, anthropic.BetaAgentVersionListParams{Limit: anthropic.Int(1)}).All() {
		versions = append(versions, v.Version)
	}
	if diff := cmp.Diff([]int64{2, 1}, versions); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	// List with paging; archive; archived agents listed on request only.
	b, err := c.Beta.Agents.New(ctx, anthropic.BetaAgentNewParams{Name: "B", Model: anthropic.BetaManagedAgentsModelConfigParams{ID: "claude-haiku-4-5"}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for ag := range c.Beta.Agents.ListAutoPaging(ctx, anthropic.BetaAgentListParams{Limit: anthropic.Int(1)}).All() {
		ids = append(ids, ag.ID)
	}
	if diff := cmp.Diff([]string{b.ID, a.ID}, ids); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	arch, err := c.Beta.Agents.Archive(ctx, a.ID, anthropic.BetaAgentArchiveParams{})
	if err != nil || arch.ArchivedAt.IsZero() {
		t.Fatalf("Archive: %v", err)
	}
	page, err := c.Beta.Agents.List(ctx, anthropic.BetaAgentListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != b.ID {
		t.Fatalf("List after archive: %v", err)
	}
	page, err = c.Beta.Agents.List(ctx, anthropic.BetaAgentListParams{IncludeArchived: anthropic.Bool(true)})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("List with archived: %v", err)
	}
	_, err = c.Beta.Agents.Update(ctx, a.ID, anthropic.BetaAgentUpdateParams{Name: anthropic.String("x")})
	wantAPIError(t, err, 400, "invalid_request_error")
	_, err = c.Beta.Agents.Get(ctx, "agent_nope", anthropic.BetaAgentGetParams{})
	wantAPIError(t, err, 404, "not_found_error")

	// Features Trove does not run, refused by the SDK's own params.
	_, err = c.Beta.Agents.New(ctx, anthropic.BetaAgentNewParams{Name: "m", Model: anthropic.BetaManagedAgentsModelConfigParams{ID: "m"},
		MCPServers: []anthropic.BetaManagedAgentsURLMCPServerParams{{Name: "x", URL: "https://example.com/mcp"}}})
	if apiErr := wantAPIError(t, err, 400, "invalid_request_error"); !strings.Contains(apiErr.RawJSON(), "mcp_servers") {
		t.Errorf("MCP refusal does not name mcp_servers: %s", apiErr.RawJSON())
	}
}

func TestAgentRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	cases := []struct {
		name, body, field string
	}{
		{"mcp servers", `{"name":"a","model":"m","mcp_servers":[{"type":"url","name":"x","url":"https://x"}]}`, "mcp_servers"},
		{"skills", `{"name":"a","model":"m","skills":[{"type":"anthropic","skill_id":"xlsx"}]}`, "skills"},
		{"multiagent", `{"name":"a","model":"m","multiagent":{"type":"multiagent_20261001"}}`, "multiagent"},
		{"aws role", `{"name":"a","model":"m","execution_identity":{"type":"aws_role","role_arn":"arn:x"}}`, "execution_identity"},
		{"mcp toolset", `{"name":"a","model":"m","tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]}`, "tools[0]"},
		{"web fetch enabled", `{"name":"a","model":"m","tools":[{"type":"agent_toolset_20260401","configs":[{"name":"web_fetch","enabled":true}]}]}`, "tools[0].configs[0]"},
		{"web fetch domains", `{"name":"a","model":"m","tools":[{"type":"agent_toolset_20260401","configs":[{"name":"web_fetch","enabled":false,"allowed_domains":["x.com"]}]}]}`, "tools[0].configs[0].allowed_domains"},
		{"auto policy", `{"name":"a","model":"m","tools":[{"type":"agent_toolset_20260401","default_config":{"permission_policy":{"type":"auto"}}}]}`, "tools[0].default_config.permission_policy"},
		{"fast", `{"name":"a","model":{"id":"m","speed":"fast"}}`, "model.speed"},
		{"inference geo", `{"name":"a","model":{"id":"m","inference_geo":"eu"}}`, "model.inference_geo"},
		{"unknown member", `{"name":"a","model":"m","vaults":[]}`, "vaults"},
		{"no name", `{"model":"m"}`, "name"},
		{"no model", `{"name":"a"}`, "model"},
		{"bad custom", `{"name":"a","model":"m","tools":[{"type":"custom","name":"a b","description":"d","input_schema":{"type":"object"}}]}`, "tools[0].name"},
		{"schema type", `{"name":"a","model":"m","tools":[{"type":"custom","name":"x","description":"d","input_schema":{"type":"array"}}]}`, "tools[0].input_schema.type"},
		{"long name", `{"name":"` + strings.Repeat("n", 257) + `","model":"m"}`, "name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := e.do(t, managed(rawReq{method: "POST", path: "/v1/agents", body: tc.body}))
			if res.status != 400 || !strings.Contains(string(res.body), "invalid_request_error") || !strings.Contains(string(res.body), tc.field) {
				t.Fatalf("%d %s; want 400 naming %s", res.status, res.body, tc.field)
			}
		})
	}
	// Nothing was half-created.
	res := e.do(t, managed(rawReq{method: "GET", path: "/v1/agents?include_archived=true"}))
	if res.status != 200 || !strings.Contains(string(res.body), `"data":[]`) {
		t.Fatalf("agents after refusals: %d %s", res.status, res.body)
	}
	// The managed-agents beta is required.
	res = e.do(t, rawReq{method: "GET", path: "/v1/agents", header: map[string]string{"anthropic-beta": ""}})
	if res.status != 400 || !strings.Contains(string(res.body), httpapi.BetaManagedAgents) {
		t.Fatalf("no beta: %d %s", res.status, res.body)
	}
}

func TestSDKEnvironments(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	c := e.sdk()
	ctx := context.Background()
	env, err := c.Beta.Environments.New(ctx, anthropic.BetaEnvironmentNewParams{
		Name: "laptop", Description: anthropic.String("my machine"),
		Config:   anthropic.BetaEnvironmentNewParamsConfigUnion{OfSelfHosted: &anthropic.BetaSelfHostedConfigParams{}},
		Metadata: map[string]string{"os": "linux"},
	})
	if err != nil {
		t.Fatalf("Environments.New: %v", err)
	}
	if !strings.HasPrefix(env.ID, "env_") || env.Config.Type != "self_hosted" || env.Description != "my machine" || env.Type != "environment" {
		t.Fatalf("created: %s", env.RawJSON())
	}
	got, err := c.Beta.Environments.Get(ctx, env.ID, anthropic.BetaEnvironmentGetParams{})
	if err != nil || got.RawJSON() != env.RawJSON() {
		t.Fatalf("Get: %v\n%s\n%s", err, got.RawJSON(), env.RawJSON())
	}
	up, err := c.Beta.Environments.Update(ctx, env.ID, anthropic.BetaEnvironmentUpdateParams{Name: anthropic.String("desk")})
	if err != nil || up.Name != "desk" || up.Description != "my machine" {
		t.Fatalf("Update: %v", err)
	}
	// Cloud environments are refused by name.
	_, err = c.Beta.Environments.New(ctx, anthropic.BetaEnvironmentNewParams{Name: "cloud",
		Config: anthropic.BetaEnvironmentNewParamsConfigUnion{OfCloud: &anthropic.BetaCloudConfigParams{}}})
	if apiErr := wantAPIError(t, err, 400, "invalid_request_error"); !strings.Contains(apiErr.RawJSON(), "config.type") {
		t.Errorf("cloud refusal: %s", apiErr.RawJSON())
	}
	var ids []string
	for x := range c.Beta.Environments.ListAutoPaging(ctx, anthropic.BetaEnvironmentListParams{Limit: anthropic.Int(1)}).All() {
		ids = append(ids, x.ID)
	}
	if diff := cmp.Diff([]string{env.ID}, ids); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	arch, err := c.Beta.Environments.Archive(ctx, env.ID, anthropic.BetaEnvironmentArchiveParams{})
	if err != nil || arch.ArchivedAt == "" {
		t.Fatalf("Archive: %v", err)
	}
	del, err := c.Beta.Environments.Delete(ctx, env.ID, anthropic.BetaEnvironmentDeleteParams{})
	if err != nil || del.ID != env.ID || del.Type != "environment_deleted" {
		t.Fatalf("Delete: %v", err)
	}
	_, err = c.Beta.Environments.Get(ctx, env.ID, anthropic.BetaEnvironmentGetParams{})
	wantAPIError(t, err, 404, "not_found_error")
}

// envKey mints an environment key over the Trove extension endpoint.
func envKey(t *testing.T, e *testEnv, envID string) (id, secret string) {
	t.Helper()
	res := e.do(t, rawReq{method: "POST", path: "/trove/v1/environments/" + envID + "/keys", body: `{"name":"worker"}`})
	if res.status != 200 {
		t.Fatalf("create key: %d %s", res.status, res.body)
	}
	var k struct{ ID, Secret, Hint string }
	if err := json.Unmarshal(res.body, &k); err != nil || k.Secret == "" || !strings.HasSuffix(k.Secret, k.Hint) {
		t.Fatalf("key: %s (%v)", res.body, err)
	}
	return k.ID, k.Secret
}

// FuzzManagedBodies posts arbitrary bodies to the agent and environment
// create and update endpoints (the parsers of tools, models, configs and
// metadata): never a 5xx, every refusal the error envelope, every 200 the
// object.
func FuzzManagedBodies(f *testing.F) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	svc := core.New(db, core.Options{})
	_, secret, err := svc.CreateKey(ctx, testWorkspace, "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	h := httpapi.NewServer(httpapi.Config{Services: svc, Auth: svc, Agents: svc, Environments: svc, Work: svc})
	url, stop := serveTransport(f, netHTTP, h, nil)
	f.Cleanup(stop)
	post := func(t *testing.T, path string, body []byte) (int, []byte) {
		req, _ := http.NewRequest("POST", url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("anthropic-beta", httpapi.BetaManagedAgents)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	status, b := post(&testing.T{}, "/v1/agents", []byte(`{"name":"seed","model":"m"}`))
	var agent struct{ ID string }
	if status != 200 || json.Unmarshal(b, &agent) != nil {
		f.Fatalf("seed agent: %d %s", status, b)
	}
	status, b = post(&testing.T{}, "/v1/environments", []byte(`{"name":"seed"}`))
	var env struct{ ID string }
	if status != 200 || json.Unmarshal(b, &env) != nil {
		f.Fatalf("seed environment: %d %s", status, b)
	}
	for _, s := range []string{
		`{"name":"a","model":{"id":"m","effort":{"type":"low"}},"tools":[{"type":"agent_toolset_20260401","default_config":{"enabled":false},"configs":[{"name":"read","enabled":true}]}]}`,
		`{"name":"a","model":"m","tools":[{"type":"custom","name":"t","description":"d","input_schema":{"type":"object","properties":{}}}]}`,
		`{"version":1,"metadata":{"a":null,"b":"c"},"tools":null,"description":null}`,
		`{"name":"e","config":{"type":"self_hosted"},"description":null,"scope":"organization"}`,
		`{"tools":[{"type":"agent_toolset_20260401","configs":[{"name":"web_search","enabled":false,"user_location":{}}]}]}`,
	} {
		for route := range uint8(4) {
			f.Add(route, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		if len(body) > 64<<10 {
			return
		}
		path := []string{"/v1/agents", "/v1/agents/" + agent.ID, "/v1/environments", "/v1/environments/" + env.ID}[route%4]
		status, b := post(t, path, body)
		var out struct {
			Type  string
			Error *struct{ Type, Message string }
		}
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %q: %d, body not JSON: %s", path, body, status, b)
		}
		switch {
		case status >= 500:
			t.Fatalf("%s %q: %d %s", path, body, status, b)
		case status == 200 && out.Type != "agent" && out.Type != "environment":
			t.Fatalf("%s %q: 200 %s", path, body, b)
		case status != 200 && (out.Type != "error" || out.Error == nil || out.Error.Message == ""):
			t.Fatalf("%s %q: %d without the envelope: %s", path, body, status, b)
		}
	})
}
