// Package agentloop is the server-side agent loop of managed sessions
// (/v1/sessions with an agent), run by trove serve like the dream runner.
//
// A session with input its agent has not answered (a user message, the
// results of every tool use of the last answer) is a pending run in the
// database's job queue (storage.Tx.JobClaim, kind core.JobSessionRun). A
// Runner claims it with a lease renewed by heartbeats, rebuilds the Messages
// conversation from the stored events, asks the model through the official
// SDK, and stores the answer as events in one append that only succeeds while
// it holds the lease and the transcript is as it read it. Only then does
// anything act on the answer: the environment's worker runs agent.tool_use
// events, the client answers agent.custom_tool_use events, and their results
// wake the run again.
//
// Durability follows from that order. A node that dies before the append
// leaves no trace of the answer: the next runner (after the lease expires)
// asks again. A node that dies after it leaves the answer stored: the next
// runner reads it back and never asks the model for that turn again, and tool
// uses are events whose IDs their results name, so a worker never runs one
// twice. Heartbeats also read the session: ending or archiving it, or
// revoking its creator's key, stops the run within a heartbeat.
package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// Tool is a tool the agent offers the model.
type Tool struct {
	Name        string
	Description string
	// Schema is the input JSON schema (an object schema).
	Schema map[string]any
	// Custom: answered by the client (agent.custom_tool_use); otherwise a
	// toolset tool run by the environment's worker (agent.tool_use).
	Custom bool
	// Ask: the tool's permission policy is always_ask (evaluated_permission
	// "ask": the worker waits for a user.tool_confirmation).
	Ask bool
}

// Spec is what a run needs to know about its session.
type Spec struct {
	// Status is the session's status (trove.SessionStatus values).
	Status string
	// Ended: terminated, archived or deleted, or its creator's key revoked:
	// nothing more runs.
	Ended  bool
	Model  string
	System string // the agent's system prompt
	Tools  []Tool
	Stores []trove.SessionStore
}

// Backend is what the loop needs of Trove's services (core in trove serve).
type Backend interface {
	ClaimSessionRun(ctx context.Context, owner string, lease time.Duration) (*core.SessionRun, error)
	RenewSessionRun(ctx context.Context, sessionID, owner string, lease time.Duration) error
	ReleaseSessionRun(ctx context.Context, sessionID, owner string, wakeSeq int64, done bool) error
	// SessionRunsWoken returns a channel closed when this process may have
	// woken a run; TakeSessionRunWake says (and clears) whether it did.
	SessionRunsWoken() <-chan struct{}
	TakeSessionRunWake() bool
	// EnsureWork queues work for the session's environment (its worker
	// runs the agent toolset) unless it has live work.
	EnsureWork(ctx context.Context, sessionID string) error
	// Load returns the session's spec and its transcript's events after
	// afterSeq (0: all of them), oldest first, read in one snapshot.
	Load(ctx context.Context, sessionID string, afterSeq int64) (*Spec, []trove.SessionEvent, error)
	// Check returns the session's spec without the transcript (the
	// heartbeat's liveness check).
	Check(ctx context.Context, sessionID string) (*Spec, error)
	// Append appends the loop's events in one transaction, only while owner
	// holds the run's lease (renewing it for lease) and the transcript's
	// newest seq is afterSeq; ECONFLICT otherwise. wakeSeq is the run's
	// wake sequence in that transaction (see
	// core.Service.AppendSessionRunEvents): the one to release it with.
	Append(ctx context.Context, sessionID, owner string, lease time.Duration, afterSeq int64, events []trove.NewSessionEvent) (out []trove.SessionEvent, wakeSeq int64, err error)
	// Changed returns a channel closed at the next commit this process
	// makes or hears of on the session's transcript or row; a run waiting
	// for the worker's tool results takes it before Load.
	Changed(sessionID string) <-chan struct{}
}

// Session statuses (trove.SessionStatus values).
const (
	statusIdle    = "idle"
	statusRunning = "running"
)

// DefaultMaxTokens is max_tokens of every Messages request unless
// Config.MaxTokens says otherwise.
const DefaultMaxTokens = 8192

// Config configures a Runner.
type Config struct {
	Backend Backend
	// Claude is the Messages client; nil means no API key is configured:
	// every turn then ends with a session.error saying so.
	Claude *anthropic.Client
	// Owner names this runner in leases; "" means host, process and a
	// random suffix.
	Owner string
	// Workers is how many sessions this runner works on at once
	// (default 4).
	Workers int
	// Lease (default 30 s) is how long a claim holds without a heartbeat;
	// Heartbeat (default 2 s) how often it is renewed and the session
	// re-read (so an end or a revoked key stops a turn within it); Poll
	// (default 1 s) how often an idle worker looks for runs other nodes
	// woke.
	Lease, Heartbeat, Poll time.Duration
	// ToolWait (default 2 s; negative: none) is how long a run keeps its
	// lease, waiting on this process's commits, for the results of the
	// toolset tool uses it handed to the environment's worker, before it
	// releases the run (to be claimed again when they arrive). Results
	// within ToolWait then cost no release, no claim and no wake-up; a
	// run gives up its wait early when every worker of this Runner is busy
	// and another run was woken.
	ToolWait time.Duration
	// MaxTokens is max_tokens of each request (default DefaultMaxTokens).
	MaxTokens int64
	// MaxRequestsPerTurn bounds the model requests between two user
	// messages (default 50): the turn then ends with a session.error and
	// stop reason retries_exhausted.
	MaxRequestsPerTurn int
	Logger             *slog.Logger
}

// Runner runs managed sessions' turns. Create it with New, start it with
// Run.
type Runner struct {
	cfg  Config
	be   Backend
	log  *slog.Logger
	idle atomic.Int32 // Run's workers waiting for a run to claim
}

// MsgNoAPIKey is the session.error message of a turn on a server without
// an Anthropic API key.
const MsgNoAPIKey = "no Anthropic API key is configured on the server: start trove serve with --anthropic-api-key or ANTHROPIC_API_KEY (and --anthropic-base-url or ANTHROPIC_BASE_URL for a gateway)"

// New returns a Runner.
func New(cfg Config) *Runner {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 30 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 2 * time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.ToolWait == 0 {
		cfg.ToolWait = 2 * time.Second
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if cfg.MaxRequestsPerTurn <= 0 {
		cfg.MaxRequestsPerTurn = 50
	}
	if cfg.Owner == "" {
		cfg.Owner = trove.NewLeaseOwner()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, be: cfg.Backend, log: cfg.Logger}
}

// Owner returns the name this runner holds leases under.
func (r *Runner) Owner() string { return r.cfg.Owner }

// Run runs Workers workers until ctx ends. A turn in progress when ctx
// ends is abandoned: its lease expires and another runner (or this one
// after a restart) resumes it from the stored events.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				ran, err := r.RunOnce(ctx)
				if err != nil && ctx.Err() == nil {
					r.log.Error("session runner", "err", err)
				}
				if !ran {
					r.wait(ctx)
				}
			}
		})
	}
	wg.Wait()
}

// wait returns when this process woke a run, after Poll, or when ctx
// ends.
func (r *Runner) wait(ctx context.Context) {
	r.idle.Add(1)
	defer r.idle.Add(-1)
	t := time.NewTimer(r.cfg.Poll)
	defer t.Stop()
	for {
		woken := r.be.SessionRunsWoken()
		if r.be.TakeSessionRunWake() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-woken:
		}
	}
}

// Causes of a run's cancellation.
var (
	errLeaseLost = errors.New("lease lost")
	errEnded     = errors.New("session ended")
)

// RunOnce claims one pending session run and works on it until the
// session waits for someone else (input, tool results) or ends; ran is
// false when none was claimable.
func (r *Runner) RunOnce(ctx context.Context) (ran bool, err error) {
	run, err := r.be.ClaimSessionRun(ctx, r.cfg.Owner, r.cfg.Lease)
	if err != nil || run == nil {
		return false, err
	}
	log := r.log.With("session_id", run.SessionID)
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var hb sync.WaitGroup
	hb.Go(func() { r.heartbeat(rctx, cancel, run.SessionID) })
	wakeSeq := run.WakeSeq // advanced by each append of the run
	done, err := r.work(rctx, run.SessionID, &wakeSeq, log)
	cancel(nil)
	hb.Wait()
	switch cause := context.Cause(rctx); {
	case errors.Is(cause, errLeaseLost):
		log.Warn("session run: lease lost; another runner has it")
		return true, nil
	case errors.Is(cause, errEnded):
		done, err = true, nil
	case ctx.Err() != nil:
		return true, nil // shutting down: the lease expires, another node resumes
	}
	if err != nil {
		log.Error("session run failed; it will be retried", "err", err)
		done = false
	}
	if rerr := r.be.ReleaseSessionRun(context.WithoutCancel(ctx), run.SessionID, r.cfg.Owner, wakeSeq, done); rerr != nil && trove.ErrorCode(rerr) != trove.ECONFLICT {
		return true, rerr
	}
	if err != nil {
		// Do not spin on a failing session: let the poll interval pass.
		t := time.NewTimer(r.cfg.Poll)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return true, nil
}

// heartbeat renews the lease and re-reads the session until ctx ends.
func (r *Runner) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, sessionID string) {
	t := time.NewTicker(r.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := r.be.RenewSessionRun(ctx, sessionID, r.cfg.Owner, r.cfg.Lease); err != nil {
			if c := trove.ErrorCode(err); c == trove.ECONFLICT || c == trove.ENOTFOUND {
				cancel(errLeaseLost)
				return
			}
			r.log.Warn("session run heartbeat failed", "session_id", sessionID, "err", err)
		}
		spec, err := r.be.Check(ctx, sessionID)
		if trove.ErrorCode(err) == trove.ENOTFOUND || (err == nil && spec.Ended) {
			cancel(errEnded)
			return
		}
	}
}

// work advances the session until it waits for others; done reports that
// nothing is left to do until the next wake. Each successful append sets
// *wakeSeq to the run's wake sequence it saw.
//
// The transcript is read whole once per claim and kept parsed; each later
// step reads only the events appended since.
func (r *Runner) work(ctx context.Context, sessionID string, wakeSeq *int64, log *slog.Logger) (done bool, err error) {
	ensured := false // EnsureWork once per claim
	var t transcript
	var toolWait time.Time // when the wait for the worker's tool results gives up
	for step := 0; ; step++ {
		if ctx.Err() != nil {
			return false, nil
		}
		changed := r.be.Changed(sessionID)
		spec, events, err := r.be.Load(ctx, sessionID, t.lastSeq())
		if err == nil && !t.add(events) {
			// Not the continuation of what is held (cannot happen with an
			// append-only transcript numbered from 1): read it whole again.
			if spec, events, err = r.be.Load(ctx, sessionID, 0); err == nil {
				t.reset(events)
			}
		}
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		if spec.Ended {
			return true, nil
		}
		c := t.conversation()
		app := func(evs ...trove.NewSessionEvent) ([]trove.SessionEvent, error) {
			out, ws, err := r.be.Append(ctx, sessionID, r.cfg.Owner, r.cfg.Lease, c.lastSeq, evs)
			if err == nil && len(out) > 0 {
				c.lastSeq = out[len(out)-1].Seq
				*wakeSeq = ws
			}
			return out, err
		}
		if len(c.open) == 0 {
			toolWait = time.Time{}
		}
		switch {
		case len(c.open) > 0:
			// Waiting for tool results: a worker must be there for the
			// toolset's (the session stays running while it works, as a
			// hosted sandbox does); a custom tool's or a confirmation's
			// wait is the client's, and the session idles with
			// requires_action naming the events, once.
			client := false
			for _, u := range c.open {
				if u.custom || u.ask {
					client = true
				} else if !ensured {
					if err := r.be.EnsureWork(ctx, sessionID); err != nil {
						return false, err
					}
					ensured = true
				}
			}
			if client && spec.Status != statusIdle {
				ids := make([]string, len(c.open))
				for i, u := range c.open {
					ids[i] = u.eventID
				}
				_, err := app(event("session.status_idle", map[string]any{"stop_reason": map[string]any{"type": "requires_action", "event_ids": ids}}))
				if trove.ErrorCode(err) == trove.ECONFLICT {
					continue
				}
				return err == nil, err
			}
			if client || r.cfg.ToolWait < 0 {
				return true, nil
			}
			// Only the worker's tools are open: keep the run while it runs
			// them, so that their results continue it at once.
			if toolWait.IsZero() {
				toolWait = time.Now().Add(r.cfg.ToolWait)
			}
			if !r.awaitResults(ctx, changed, toolWait) {
				return true, nil
			}
			continue
		case !c.needsModel:
			var evs []trove.NewSessionEvent
			if c.spanOpen != "" {
				// A request that an interrupt (or a dead runner) left without an end.
				evs = append(evs, event("span.model_request_end", map[string]any{"model_request_start_id": c.spanOpen, "is_error": true, "model_usage": usageBody(anthropic.Usage{})}))
			}
			if spec.Status == statusRunning || spec.Status == "rescheduling" || c.interrupted {
				evs = append(evs, event("session.status_idle", map[string]any{"stop_reason": map[string]any{"type": "end_turn"}}))
			}
			if len(evs) == 0 {
				return true, nil
			}
			_, err := app(evs...)
			if trove.ErrorCode(err) == trove.ECONFLICT {
				continue
			}
			return err == nil, err
		}
		// The model must answer.
		if c.spanOpen == "" && c.turnRequests >= r.cfg.MaxRequestsPerTurn {
			_, err := app(
				event("session.error", errorBody("tool_use_limit_reached_error", fmt.Sprintf("the turn made %d model requests, the server's limit per user message (trove serve --session-max-requests-per-turn)", c.turnRequests))),
				event("session.status_idle", map[string]any{"stop_reason": map[string]any{"type": "retries_exhausted"}}))
			if trove.ErrorCode(err) == trove.ECONFLICT {
				continue
			}
			return err == nil, err
		}
		var pre []trove.NewSessionEvent
		if spec.Status != statusRunning {
			pre = append(pre, event("session.status_running", map[string]any{}))
		}
		spanID := c.spanOpen
		if spanID == "" {
			pre = append(pre, event("span.model_request_start", map[string]any{}))
		}
		if r.cfg.Claude == nil {
			if len(pre) > 0 {
				out, err := app(pre...)
				if trove.ErrorCode(err) == trove.ECONFLICT {
					continue
				}
				if err != nil {
					return false, err
				}
				if spanID == "" {
					spanID = out[len(out)-1].ID
				}
			}
			_, err := app(
				event("span.model_request_end", map[string]any{"model_request_start_id": spanID, "is_error": true, "model_usage": usageBody(anthropic.Usage{})}),
				event("session.error", errorBody("model_request_failed_error", MsgNoAPIKey)),
				event("session.status_idle", map[string]any{"stop_reason": map[string]any{"type": "retries_exhausted"}}))
			if trove.ErrorCode(err) == trove.ECONFLICT {
				continue
			}
			return err == nil, err
		}
		// The request goes out while its span's start is being stored, not
		// after: the answer is stored only once the start is (its append
		// expects the transcript with it), and a start refused (new input,
		// a lost lease) cancels the request and reads again. A crash before
		// the start is stored leaves no trace of the request: the next
		// runner asks again, as for any answer that was not stored.
		mctx, cancelReq := context.WithCancel(ctx)
		var preOut []trove.SessionEvent
		var preWake int64
		var preErr error
		var preWG sync.WaitGroup
		if len(pre) > 0 {
			after := c.lastSeq
			preWG.Go(func() {
				preOut, preWake, preErr = r.be.Append(ctx, sessionID, r.cfg.Owner, r.cfg.Lease, after, pre)
				if preErr != nil {
					cancelReq()
				}
			})
		}
		msg, err := r.cfg.Claude.Messages.New(mctx, r.request(spec, c))
		preWG.Wait()
		cancelReq()
		if len(pre) > 0 {
			if trove.ErrorCode(preErr) == trove.ECONFLICT {
				continue
			}
			if preErr != nil {
				return false, preErr
			}
			c.lastSeq = preOut[len(preOut)-1].Seq
			*wakeSeq = preWake
			if spanID == "" {
				spanID = preOut[len(preOut)-1].ID
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			log.Warn("session run: the Messages API request failed", "err", modelError(err))
			_, aerr := app(
				event("span.model_request_end", map[string]any{"model_request_start_id": spanID, "is_error": true, "model_usage": usageBody(anthropic.Usage{})}),
				event("session.error", errorBody(modelErrorType(err), "the Messages API request failed: "+modelError(err))),
				event("session.status_idle", map[string]any{"stop_reason": map[string]any{"type": "retries_exhausted"}}))
			if trove.ErrorCode(aerr) == trove.ECONFLICT {
				continue
			}
			return aerr == nil, aerr
		}
		// The answer, stored in one append before anything acts on it.
		_, err = app(answerEvents(spec, spanID, msg)...)
		if trove.ErrorCode(err) == trove.ECONFLICT {
			// New input arrived (or the lease moved): read again; the model is
			// asked again only because this answer was not stored.
			continue
		}
		if err != nil {
			return false, err
		}
	}
}

// awaitResults waits, holding the run, for the session to change (changed
// closed: the worker's results, most likely) until until; false when the
// run should be released instead: the time is up, or every worker of Run
// is busy and another run was woken. ctx's end returns true (work then
// sees it).
func (r *Runner) awaitResults(ctx context.Context, changed <-chan struct{}, until time.Time) bool {
	d := time.Until(until)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		var others <-chan struct{}
		if r.idle.Load() == 0 {
			others = r.be.SessionRunsWoken()
		}
		select {
		case <-changed:
			return true
		case <-ctx.Done():
			return true
		case <-t.C:
			return false
		case <-others:
			select {
			case <-changed:
				return true
			default:
			}
			if r.be.TakeSessionRunWake() {
				return false
			}
		}
	}
}

// request builds the Messages request of a turn.
func (r *Runner) request(spec *Spec, c *conversation) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(spec.Model),
		MaxTokens: r.cfg.MaxTokens,
		Messages:  c.requestMessages(),
	}
	if sys := SystemPrompt(spec.System, spec.Stores); sys != "" {
		p.System = []anthropic.TextBlockParam{{Text: sys}}
	}
	for _, t := range spec.Tools {
		schema := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range t.Schema {
			switch k {
			case "type":
			case "properties":
				schema.Properties = v
			case "required":
				if arr, ok := v.([]any); ok {
					for _, s := range arr {
						if str, ok := s.(string); ok {
							schema.Required = append(schema.Required, str)
						}
					}
				}
			default:
				schema.ExtraFields[k] = v
			}
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name: t.Name, Description: anthropic.String(t.Description), InputSchema: schema,
		}})
	}
	return p
}

// answerEvents turns the model's answer into events, in block order: each
// thinking block an agent.thinking, each run of text blocks an
// agent.message, each tool use an agent.tool_use (a toolset tool, for the
// environment's worker) or agent.custom_tool_use (a custom tool, for the
// client); then the span's end with the usage.
func answerEvents(spec *Spec, spanID string, msg *anthropic.Message) []trove.NewSessionEvent {
	var evs []trove.NewSessionEvent
	var texts []map[string]any
	flush := func() {
		if len(texts) > 0 {
			evs = append(evs, event(trove.EventAgentMessage, map[string]any{"content": texts}))
			texts = nil
		}
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			texts = append(texts, map[string]any{"type": "text", "text": b.AsText().Text})
		case "thinking":
			flush()
			th := b.AsThinking()
			evs = append(evs, event(trove.EventAgentThinking, map[string]any{"thinking": th.Thinking, "signature": th.Signature}))
		case "tool_use":
			flush()
			u := b.AsToolUse()
			var input map[string]any
			_ = json.Unmarshal(u.Input, &input)
			if input == nil {
				input = map[string]any{}
			}
			tool, _ := findTool(spec.Tools, u.Name)
			if tool.Custom {
				evs = append(evs, event(trove.EventAgentCustomToolUse, map[string]any{"name": u.Name, "input": input}))
			} else {
				perm := "allow"
				if tool.Ask {
					perm = "ask"
				}
				evs = append(evs, event(trove.EventAgentToolUse, map[string]any{"name": u.Name, "input": input, "evaluated_permission": perm}))
			}
		}
	}
	flush()
	evs = append(evs, event("span.model_request_end", map[string]any{"model_request_start_id": spanID, "is_error": false, "model_usage": usageBody(msg.Usage)}))
	return evs
}

func findTool(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

func usageBody(u anthropic.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_input_tokens": u.CacheReadInputTokens, "cache_creation_input_tokens": u.CacheCreationInputTokens,
	}
}

func errorBody(typ, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"type": typ, "message": msg, "retry_status": map[string]any{"type": "exhausted"}}}
}

func event(typ string, body any) trove.NewSessionEvent {
	b, _ := json.Marshal(body)
	return trove.NewSessionEvent{Type: typ, Body: string(b)}
}

// modelError describes a Messages API failure without secrets.
func modelError(err error) string {
	var apierr *anthropic.Error
	if errors.As(err, &apierr) {
		return fmt.Sprintf("%d %s", apierr.StatusCode, strings.TrimSpace(apierr.RawJSON()))
	}
	return "the model API could not be reached"
}

// modelErrorType is the session.error type of a Messages API failure.
func modelErrorType(err error) string {
	var apierr *anthropic.Error
	if errors.As(err, &apierr) {
		switch apierr.StatusCode {
		case 429:
			return "model_rate_limited_error"
		case 529:
			return "model_overloaded_error"
		}
	}
	return "model_request_failed_error"
}
