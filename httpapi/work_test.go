package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/lib/environments"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/trovehq/trove"
)

// decodeSecret reads a work secret as lib/environments does.
func decodeSecret(t *testing.T, secret string) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(secret, "="))
	if err != nil {
		t.Fatalf("secret: %v", err)
	}
	var p struct {
		SessionsToken string `json:"sessions_token"`
	}
	if err := json.Unmarshal(raw, &p); err != nil || p.SessionsToken == "" {
		t.Fatalf("secret payload: %v", err)
	}
	return p.SessionsToken
}

// TestSDKWorkQueue drives the work queue with the official SDK and the
// official lib/environments WorkPoller (poll, ack, auto-stop), the per-item
// token exactly as the worker uses it (heartbeat, stop, the session's
// stores), and the refusals the worker relies on (412 with the lease, 409
// on a second stop, 401 after revocation).
func TestSDKWorkQueue(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		testSDKWorkQueue(t, newEnv(t, netHTTP))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testSDKWorkQueue(t, newPostgresEnv(t, netHTTP))
	})
}

func testSDKWorkQueue(t *testing.T, e *testEnv) {
	c := e.sdk()
	ctx := context.Background()

	st, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.svc.CreateStore(e.ctx(), trove.CreateStoreParams{Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	se, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Beta.Environments.New(ctx, anthropic.BetaEnvironmentNewParams{Name: "laptop",
		Config: anthropic.BetaEnvironmentNewParamsConfigUnion{OfSelfHosted: &anthropic.BetaSelfHostedConfigParams{}}})
	if err != nil {
		t.Fatal(err)
	}
	keyID, envKey := envKey(t, e, env.ID)
	asEnv := option.WithAuthToken(envKey)

	// Nothing queued: an empty poll.
	empty, err := c.Beta.Environments.Work.Poll(ctx, env.ID, anthropic.BetaEnvironmentWorkPollParams{}, asEnv)
	if err != nil || (empty != nil && empty.ID != "") {
		t.Fatalf("empty poll: %+v, %v", empty, err)
	}
	item, err := e.svc.EnqueueSessionWork(ctx, testWorkspace, env.ID, se.ID)
	if err != nil {
		t.Fatal(err)
	}

	// The official poller claims and acknowledges it.
	client := anthropic.NewClient(option.WithBaseURL(e.url), option.WithAPIKey("unused"))
	poller := environments.NewWorkPoller(ctx, client, environments.WorkPollerOptions{
		EnvironmentID: env.ID, EnvironmentKey: envKey, WorkerID: "worker-1", Drain: true,
		BlockMs: param.NewOpt(int64(200)), Logger: slog.New(slog.DiscardHandler),
	})
	if !poller.Next() {
		t.Fatalf("WorkPoller.Next: %v", poller.Err())
	}
	work := poller.Current()
	if work.ID != item.ID || work.Data.ID != se.ID || work.Data.Type != "session" || work.Secret == "" || work.EnvironmentID != env.ID {
		t.Fatalf("claimed: %s", work.RawJSON())
	}
	got, err := c.Beta.Environments.Work.Get(ctx, work.ID, anthropic.BetaEnvironmentWorkGetParams{EnvironmentID: env.ID}, asEnv)
	if err != nil || got.State != "starting" || got.AcknowledgedAt == "" || got.Secret != "" {
		t.Fatalf("after ack: %s (%v)", got.RawJSON(), err)
	}

	// The per-item token: the lease, the session's store, nothing else.
	token := decodeSecret(t, work.Secret)
	asItem := option.WithAuthToken(token)
	hb, err := c.Beta.Environments.Work.Heartbeat(ctx, work.ID, anthropic.BetaEnvironmentWorkHeartbeatParams{
		EnvironmentID: env.ID, ExpectedLastHeartbeat: param.NewOpt("NO_HEARTBEAT"), DesiredTTLSeconds: param.NewOpt(int64(60))}, asItem)
	if err != nil || !hb.LeaseExtended || hb.State != "active" || hb.TTLSeconds != 60 || hb.LastHeartbeat == "" {
		t.Fatalf("heartbeat: %+v, %v", hb, err)
	}
	_, err = c.Beta.Environments.Work.Heartbeat(ctx, work.ID, anthropic.BetaEnvironmentWorkHeartbeatParams{
		EnvironmentID: env.ID, ExpectedLastHeartbeat: param.NewOpt("NO_HEARTBEAT")}, asItem)
	apiErr := wantAPIError(t, err, 412, "invalid_request_error")
	var lost struct {
		Error struct {
			Details struct {
				ErrorCode    string         `json:"error_code"`
				CurrentState map[string]any `json:"current_state"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(apiErr.RawJSON()), &lost); err != nil || lost.Error.Details.ErrorCode != "heartbeat_precondition_failed" ||
		lost.Error.Details.CurrentState["state"] != "active" || lost.Error.Details.CurrentState["last_heartbeat"] != hb.LastHeartbeat {
		t.Fatalf("412 body: %s", apiErr.RawJSON())
	}
	hb2, err := c.Beta.Environments.Work.Heartbeat(ctx, work.ID, anthropic.BetaEnvironmentWorkHeartbeatParams{
		EnvironmentID: env.ID, ExpectedLastHeartbeat: param.NewOpt(hb.LastHeartbeat)}, asItem)
	if err != nil || !hb2.LeaseExtended || hb2.LastHeartbeat == hb.LastHeartbeat {
		t.Fatalf("second heartbeat: %+v, %v", hb2, err)
	}
	if _, err := c.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{}, asItem); err != nil {
		t.Fatalf("token reading its store: %v", err)
	}
	_, err = c.Beta.MemoryStores.Get(ctx, other.ID, anthropic.BetaMemoryStoreGetParams{}, asItem)
	wantAPIError(t, err, 404, "not_found_error")
	_, err = c.Beta.Agents.List(ctx, anthropic.BetaAgentListParams{}, asItem)
	wantAPIError(t, err, 403, "permission_error")
	_, err = c.Beta.Environments.Work.Poll(ctx, env.ID, anthropic.BetaEnvironmentWorkPollParams{}, asItem)
	wantAPIError(t, err, 403, "permission_error")
	// The environment key reaches the queue only.
	_, err = c.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{}, asEnv)
	wantAPIError(t, err, 404, "not_found_error")
	_, err = c.Beta.Environments.Get(ctx, env.ID, anthropic.BetaEnvironmentGetParams{}, asEnv)
	wantAPIError(t, err, 403, "permission_error")

	upd, err := c.Beta.Environments.Work.Update(ctx, work.ID, anthropic.BetaEnvironmentWorkUpdateParams{EnvironmentID: env.ID,
		BetaSelfHostedWorkUpdateRequest: anthropic.BetaSelfHostedWorkUpdateRequestParam{Metadata: map[string]string{"host": "box"}}}, asEnv)
	if err != nil || upd.Metadata["host"] != "box" {
		t.Fatalf("Update: %v", err)
	}
	stats, err := c.Beta.Environments.Work.Stats(ctx, env.ID, anthropic.BetaEnvironmentWorkStatsParams{}, asEnv)
	if err != nil || stats.Depth != 0 || stats.Pending != 0 || stats.WorkersPolling != 1 || stats.Type != "work_queue_stats" {
		t.Fatalf("Stats: %+v, %v", stats, err)
	}
	list, err := c.Beta.Environments.Work.List(ctx, env.ID, anthropic.BetaEnvironmentWorkListParams{}, asEnv)
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != work.ID || list.Data[0].State != "active" {
		t.Fatalf("List: %v", err)
	}

	// The poller's next call stops the item it yielded (AutoStop) and, with
	// Drain, ends on the empty queue; the token dies with the item.
	if poller.Next() {
		t.Fatalf("second Next yielded %s", poller.Current().ID)
	}
	if err := poller.Err(); err != nil {
		t.Fatalf("poller: %v", err)
	}
	got, err = c.Beta.Environments.Work.Get(ctx, work.ID, anthropic.BetaEnvironmentWorkGetParams{EnvironmentID: env.ID}, asEnv)
	if err != nil || got.State != "stopped" || got.StoppedAt == "" {
		t.Fatalf("after auto-stop: %s (%v)", got.RawJSON(), err)
	}
	_, err = c.Beta.Environments.Work.Stop(ctx, work.ID, anthropic.BetaEnvironmentWorkStopParams{EnvironmentID: env.ID,
		BetaSelfHostedWorkStopRequest: anthropic.BetaSelfHostedWorkStopRequestParam{Force: param.NewOpt(true)}}, asEnv)
	wantAPIError(t, err, 409, "conflict_error")
	_, err = c.Beta.MemoryStores.Get(ctx, st.ID, anthropic.BetaMemoryStoreGetParams{}, asItem)
	wantAPIError(t, err, 401, "authentication_error")

	// Revoking the environment key stops it at once.
	res := e.do(t, rawReq{method: "POST", path: "/trove/v1/environments/" + env.ID + "/keys/" + keyID + "/revoke"})
	if res.status != 200 || !strings.Contains(string(res.body), `"revoked_at":"`) {
		t.Fatalf("revoke: %d %s", res.status, res.body)
	}
	_, err = c.Beta.Environments.Work.Poll(ctx, env.ID, anthropic.BetaEnvironmentWorkPollParams{}, asEnv)
	wantAPIError(t, err, 401, "authentication_error")
	res = e.do(t, rawReq{method: "GET", path: "/trove/v1/environments/" + env.ID + "/keys"})
	if res.status != 200 || !strings.Contains(string(res.body), keyID) || strings.Contains(string(res.body), envKey) {
		t.Fatalf("list keys: %d %s", res.status, res.body)
	}
}

// TestWorkPollBlocks: a blocking poll returns as soon as work is queued, and
// an empty one returns after block_ms.
func TestWorkPollBlocks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, netHTTP)
	c := e.sdk()
	ctx := context.Background()
	se, _, err := e.svc.CreateSession(e.ctx(), trove.CreateSessionParams{})
	if err != nil {
		t.Fatal(err)
	}
	env, err := c.Beta.Environments.New(ctx, anthropic.BetaEnvironmentNewParams{Name: "e"})
	if err != nil {
		t.Fatal(err)
	}
	_, envKey := envKey(t, e, env.ID)
	start := time.Now()
	w, err := c.Beta.Environments.Work.Poll(ctx, env.ID, anthropic.BetaEnvironmentWorkPollParams{BlockMs: param.NewOpt(int64(150))}, option.WithAuthToken(envKey))
	if err != nil || (w != nil && w.ID != "") || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("empty blocking poll: %+v, %v after %s", w, err, time.Since(start))
	}
	done := make(chan *anthropic.BetaSelfHostedWork, 1)
	go func() {
		w, err := c.Beta.Environments.Work.Poll(ctx, env.ID, anthropic.BetaEnvironmentWorkPollParams{BlockMs: param.NewOpt(int64(999))}, option.WithAuthToken(envKey))
		if err != nil {
			t.Errorf("poll: %v", err)
		}
		done <- w
	}()
	if _, err := e.svc.EnqueueSessionWork(ctx, testWorkspace, env.ID, se.ID); err != nil {
		t.Fatal(err)
	}
	if w := <-done; w == nil || w.Data.ID != se.ID {
		t.Fatalf("blocking poll got %+v", w)
	}
	res := e.do(t, managed(rawReq{method: "GET", path: "/v1/environments/" + env.ID + "/work/poll?block_ms=1000", header: map[string]string{"Authorization": "Bearer " + envKey}}))
	if res.status != 400 || !strings.Contains(string(res.body), "block_ms") {
		t.Fatalf("block_ms=1000: %d %s", res.status, res.body)
	}
}
