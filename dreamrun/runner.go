// Package dreamrun runs dreams: a Runner inside trove serve claims queued
// dreams from the database (a durable queue shared by every node), and for
// each one prepares the output store (a copy of the input for create_new,
// the input itself for update_existing), opens a session for the dream,
// and runs a Messages API loop through the official Go SDK with the memory
// tool over the output store and a read-only transcript tool over the input
// sessions. Every write is a version attributed to the dream's session, so
// the change set is reviewable as a diff against the input
// (dreamdiff.ChangeSet).
//
// Leases and heartbeats: a claimed dream is held by one runner for Lease,
// renewed every Heartbeat. A heartbeat also reads the dream, so a cancel
// stops the run within Heartbeat; a lost lease stops it too. A dream whose
// runner died (its lease expired while running) is claimed again by some
// runner and failed with error type runner_lost: it never stays running.
package dreamrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/claude"
	"github.com/trovehq/trove/memtool/storefs"
)

// Budget bounds one dream's run. Zero fields take DefaultBudget's values.
type Budget struct {
	MaxTurns        int           // Messages requests
	MaxTokens       int64         // input + output tokens over the whole run
	MaxDuration     time.Duration // wall time from the claim
	MaxOutputTokens int64         // max_tokens of each request
}

// DefaultBudget is the budget when Config.Budget leaves fields zero.
func DefaultBudget() Budget {
	return Budget{MaxTurns: 60, MaxTokens: 3_000_000, MaxDuration: time.Hour, MaxOutputTokens: 8192}
}

// Config configures a Runner.
type Config struct {
	// Service is the local core over the database holding the queue.
	Service *core.Service
	// Claude is the Messages client; nil means no API key is configured:
	// every dream then fails at once with error type model_not_configured.
	Claude *anthropic.Client
	// Owner names this runner in leases; "" means host name, process ID
	// and a random suffix.
	Owner string
	// Workers is how many dreams this runner runs at once (default 1).
	Workers int
	// Lease (default 30 s) is how long a claim holds without a heartbeat;
	// Heartbeat (default 2 s) how often it is renewed, which also bounds
	// how long a cancel takes to stop a run; Poll (default 1 s) how often
	// an idle worker looks for queued dreams.
	Lease, Heartbeat, Poll time.Duration
	Budget                 Budget
	// TranscriptPage is how many bytes of a transcript one read_transcript
	// call returns (default 24,000).
	TranscriptPage int
	// MaxInputBytes bounds the content of the input store
	// (input_memory_store_too_large beyond it); default 20 MiB.
	MaxInputBytes int64
	Logger        *slog.Logger
}

// Runner runs dreams. Create it with New and start it with Run.
type Runner struct {
	cfg Config
	svc *core.Service
	log *slog.Logger
}

// Errors a dream can end with, beyond the hosted API's.
const (
	// MsgNoAPIKey is the error message of a dream run by a server without
	// an Anthropic API key.
	MsgNoAPIKey = "no Anthropic API key is configured on the server: start trove serve with --anthropic-api-key or ANTHROPIC_API_KEY (and --anthropic-base-url or ANTHROPIC_BASE_URL for a gateway)"
	// MsgRunnerLost is the error message of a dream found running with an
	// expired lease.
	MsgRunnerLost = "the server running this dream stopped before it finished (its lease expired); the output store keeps what was written; create a new dream to run it again"
)

// New returns a Runner.
func New(cfg Config) *Runner {
	d := DefaultBudget()
	if cfg.Budget.MaxTurns <= 0 {
		cfg.Budget.MaxTurns = d.MaxTurns
	}
	if cfg.Budget.MaxTokens <= 0 {
		cfg.Budget.MaxTokens = d.MaxTokens
	}
	if cfg.Budget.MaxDuration <= 0 {
		cfg.Budget.MaxDuration = d.MaxDuration
	}
	if cfg.Budget.MaxOutputTokens <= 0 {
		cfg.Budget.MaxOutputTokens = d.MaxOutputTokens
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
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
	if cfg.TranscriptPage <= 0 {
		cfg.TranscriptPage = 24000
	}
	if cfg.MaxInputBytes <= 0 {
		cfg.MaxInputBytes = 20 << 20
	}
	if cfg.Owner == "" {
		cfg.Owner = trove.NewLeaseOwner()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, svc: cfg.Service, log: cfg.Logger}
}

// Owner returns the name this runner holds leases under.
func (r *Runner) Owner() string { return r.cfg.Owner }

// Run runs Workers workers until ctx ends, each claiming and running one
// dream at a time. A run in progress when ctx ends is abandoned: its lease
// expires and another runner (or this one after a restart) fails it with
// runner_lost.
func (r *Runner) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for range r.cfg.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				ran, err := r.RunOnce(ctx)
				if err != nil && ctx.Err() == nil {
					r.log.Error("dream runner", "err", err)
				}
				if !ran {
					select {
					case <-ctx.Done():
					case <-time.After(r.cfg.Poll):
					}
				}
			}
		})
	}
	wg.Wait()
}

// RunOnce claims one dream and runs it to its end; ran is false when none
// was claimable.
func (r *Runner) RunOnce(ctx context.Context) (ran bool, err error) {
	d, err := r.svc.ClaimDream(ctx, r.cfg.Owner, r.cfg.Lease)
	if err != nil || d == nil {
		return false, err
	}
	r.log.Info("dream claimed", "dream_id", d.ID, "status", d.Status, "attempt", d.Attempts)
	return true, r.run(ctx, d)
}

// outcome is how a run ended.
type outcome struct {
	status trove.DreamStatus
	err    *trove.DreamError
}

func failed(typ, format string, args ...any) *outcome {
	return &outcome{status: trove.DreamFailed, err: &trove.DreamError{Type: typ, Message: fmt.Sprintf(format, args...)}}
}

// Cancellation causes of a run's context.
var (
	errCanceled  = errors.New("dream canceled")
	errLeaseLost = errors.New("lease lost")
	errTimeout   = errors.New("dream ran past its time budget")
)

// run runs a claimed dream and records its end.
func (r *Runner) run(parent context.Context, d *trove.Dream) error {
	st := &state{dream: d}
	var out *outcome
	switch {
	case d.Status.Terminal():
		// Canceled while its previous runner died: end the session, release.
		out = &outcome{status: d.Status}
	case d.Status == trove.DreamRunning:
		// Its runner died mid-run (the lease expired). A dream claimed back
		// while still pending (its runner died before starting) runs.
		out = failed(trove.DreamErrRunnerLost, "%s", MsgRunnerLost)
	case r.cfg.Claude == nil:
		out = failed(trove.DreamErrModelNotConfigured, "%s", MsgNoAPIKey)
	default:
		// Checked at the claim: a key revoked while the dream was queued
		// runs nothing (no model request, no output store).
		if lost := r.creatorLost(parent, d); lost != nil {
			out = credentialRevoked(lost)
		} else {
			out = r.execute(parent, st)
		}
	}
	// The dream's session ends with the dream (archived, not deleted).
	sessionID := d.SessionID
	if st.sessionID != "" {
		sessionID = st.sessionID
	}
	if sessionID != "" {
		pctx := trove.WithPrincipal(context.WithoutCancel(parent), creator(d))
		if _, err := r.svc.EndSession(pctx, sessionID); err != nil {
			r.log.Error("dream: ending its session", "dream_id", d.ID, "err", err)
		}
	}
	usage := st.usageCopy()
	fin, err := r.svc.FinishDream(context.WithoutCancel(parent), d.ID, r.cfg.Owner, out.status, out.err, usage)
	if err != nil {
		return fmt.Errorf("dream %s: recording its end: %w", d.ID, err)
	}
	attrs := []any{"dream_id", d.ID, "status", fin.Status, "input_tokens", fin.Usage.InputTokens, "output_tokens", fin.Usage.OutputTokens}
	if fin.Error != nil {
		attrs = append(attrs, "error_type", fin.Error.Type, "error", fin.Error.Message)
	}
	r.log.Info("dream ended", attrs...)
	return nil
}

// state is what a run accumulates, read by its heartbeats.
type state struct {
	dream     *trove.Dream
	mu        sync.Mutex
	usage     trove.DreamUsage
	hasUsage  bool
	sessionID string
}

func (s *state) addUsage(u anthropic.Usage) {
	s.mu.Lock()
	s.usage.InputTokens += u.InputTokens
	s.usage.OutputTokens += u.OutputTokens
	s.usage.CacheReadInputTokens += u.CacheReadInputTokens
	s.usage.CacheCreationInputTokens += u.CacheCreationInputTokens
	s.hasUsage = true
	s.mu.Unlock()
}

func (s *state) usageCopy() *trove.DreamUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hasUsage {
		return nil
	}
	u := s.usage
	return &u
}

func (s *state) tokens() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage.InputTokens + s.usage.OutputTokens
}

// creatorLost returns the error of the dream creator's credential when
// it is no longer valid (trove.EUNAUTHENTICATED: the key was revoked),
// else nil; a check that fails otherwise (the database) is not a loss.
func (r *Runner) creatorLost(ctx context.Context, d *trove.Dream) error {
	err := r.svc.CheckActorCredential(ctx, d.WorkspaceID, d.CreatedBy)
	if trove.ErrorCode(err) == trove.EUNAUTHENTICATED {
		return err
	}
	return nil
}

// credentialRevoked is the outcome of a dream whose creator's credential
// stopped being valid (err, from creatorLost or trove.CredentialLost).
func credentialRevoked(err error) *outcome {
	return failed(trove.DreamErrCredentialRevoked, "the dream stopped because its creator's credential is no longer valid (%s); the output keeps what was written; create the dream again with a valid key", trove.ErrorMessage(err))
}

// creator is the principal of the dream's creator (a workspace key), used
// to create the output store and the dream's session and to read the
// input sessions' transcripts.
func creator(d *trove.Dream) *trove.Principal {
	return &trove.Principal{WorkspaceID: d.WorkspaceID, Actor: d.CreatedBy}
}

// execute prepares the output and runs the model loop under the budget,
// with heartbeats that notice a cancel or a lost lease.
func (r *Runner) execute(parent context.Context, st *state) *outcome {
	d := st.dream
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	ctx, cancelTimeout := context.WithTimeoutCause(ctx, r.cfg.Budget.MaxDuration, errTimeout)
	defer cancelTimeout()
	// The rule for long-lived work: the creator's key is re-checked every
	// heartbeat, and a revoked one stops the run (trove.WatchCredential).
	ctx, stopWatch := trove.WatchCredential(ctx, r.cfg.Heartbeat, func(ctx context.Context) error {
		return r.svc.CheckActorCredential(ctx, d.WorkspaceID, d.CreatedBy)
	})
	defer stopWatch()

	if _, err := r.svc.RecordDream(ctx, d.ID, r.cfg.Owner, r.cfg.Lease, core.DreamProgress{Running: true}); err != nil && ctx.Err() == nil {
		if trove.ErrorCode(err) == trove.ECONFLICT {
			return &outcome{status: trove.DreamFailed, err: &trove.DreamError{Type: trove.DreamErrRunnerLost, Message: MsgRunnerLost}}
		}
		return failed(trove.DreamErrInternal, "recording the start failed: %s", trove.ErrorMessage(err))
	}
	hbDone := make(chan struct{})
	var hbWG sync.WaitGroup
	hbWG.Go(func() {
		t := time.NewTicker(r.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			cur, err := r.svc.RecordDream(context.WithoutCancel(ctx), d.ID, r.cfg.Owner, r.cfg.Lease, core.DreamProgress{Usage: st.usageCopy()})
			switch {
			case trove.ErrorCode(err) == trove.ECONFLICT || trove.ErrorCode(err) == trove.ENOTFOUND:
				cancel(errLeaseLost)
				return
			case err != nil:
				r.log.Warn("dream heartbeat failed", "dream_id", d.ID, "err", err)
			case cur.Status == trove.DreamCanceled:
				cancel(errCanceled)
				return
			}
		}
	})
	defer func() {
		close(hbDone)
		hbWG.Wait()
	}()

	out := r.work(ctx, st)
	if out != nil && out.status == trove.DreamCompleted {
		return out
	}
	switch cause := context.Cause(ctx); {
	case trove.CredentialLost(ctx) != nil:
		return credentialRevoked(trove.CredentialLost(ctx))
	case errors.Is(cause, errCanceled):
		return &outcome{status: trove.DreamCanceled}
	case errors.Is(cause, errLeaseLost):
		return &outcome{status: trove.DreamFailed, err: &trove.DreamError{Type: trove.DreamErrRunnerLost, Message: MsgRunnerLost}}
	case errors.Is(cause, errTimeout):
		return failed(trove.DreamErrTimeout, "the dream ran past its time budget of %s; the output keeps what was written", r.cfg.Budget.MaxDuration)
	case parent.Err() != nil:
		return failed(trove.DreamErrRunnerLost, "the server shut down during the dream; the output keeps what was written")
	}
	if out == nil {
		return failed(trove.DreamErrInternal, "the dream stopped unexpectedly")
	}
	return out
}

// work does the dream: output store, session, copy, model loop.
func (r *Runner) work(ctx context.Context, st *state) *outcome {
	d := st.dream
	owner := creator(d)
	octx := trove.WithPrincipal(ctx, owner)
	in, err := r.svc.GetStore(octx, d.InputStoreID)
	if trove.ErrorCode(err) == trove.ENOTFOUND || (err == nil && in.ArchivedAt != nil) {
		return failed(trove.DreamErrStoreUnavailable, "the input memory store %s was archived or deleted after the dream was created", d.InputStoreID)
	}
	if err != nil {
		return r.internal(ctx, "reading the input store", err)
	}
	for _, sid := range d.SessionIDs {
		if _, err := r.svc.GetSession(octx, sid); trove.ErrorCode(err) == trove.ENOTFOUND {
			return failed(trove.DreamErrSessionUnavailable, "the input session %s was deleted after the dream was created", sid)
		} else if err != nil {
			return r.internal(ctx, "reading an input session", err)
		}
	}
	outputID := in.ID
	attach := []trove.AttachStoreParams{{StoreID: in.ID, Access: trove.AccessReadWrite}}
	if d.OutputBehavior == trove.OutputCreateNew {
		name := in.Name + " (dream " + d.ID + ")"
		if len([]rune(name)) > 255 {
			name = string([]rune(name)[:255-len(d.ID)-9]) + " (dream " + d.ID + ")"
		}
		outStore, err := r.svc.CreateStore(octx, trove.CreateStoreParams{
			Name:        name,
			Description: fmt.Sprintf("Consolidated by dream %s from memory store %s.", d.ID, in.ID),
			Metadata:    map[string]string{"trove_dream_id": d.ID, "trove_dream_input": in.ID},
		})
		if err != nil {
			return r.internal(ctx, "creating the output store", err)
		}
		outputID = outStore.ID
		attach = []trove.AttachStoreParams{{StoreID: outputID, Access: trove.AccessReadWrite}, {StoreID: in.ID, Access: trove.AccessReadOnly}}
	}
	se, token, err := r.svc.CreateSession(octx, trove.CreateSessionParams{Stores: attach})
	if err != nil {
		return r.internal(ctx, "creating the dream's session", err)
	}
	st.mu.Lock()
	st.sessionID = se.ID
	st.mu.Unlock()
	if _, err := r.svc.RecordDream(ctx, d.ID, r.cfg.Owner, r.cfg.Lease, core.DreamProgress{OutputStoreID: outputID, SessionID: se.ID}); err != nil {
		return r.internal(ctx, "recording the output store", err)
	}
	sp, err := r.svc.Authenticate(ctx, token)
	if err != nil {
		return r.internal(ctx, "authenticating the dream's session", err)
	}
	sctx := trove.WithPrincipal(ctx, sp)
	if d.OutputBehavior == trove.OutputCreateNew {
		if out := r.copyStore(sctx, in.ID, outputID); out != nil {
			return out
		}
	} else if out := r.checkSize(sctx, in.ID); out != nil {
		return out
	}
	return r.converse(sctx, st, outputID, owner)
}

// internal is an internal_error outcome, unless ctx ended (then the
// caller reports the cause).
func (r *Runner) internal(ctx context.Context, what string, err error) *outcome {
	if ctx.Err() != nil {
		return nil
	}
	r.log.Error("dream: "+what, "err", err)
	return failed(trove.DreamErrInternal, "%s failed: %s", what, trove.ErrorMessage(err))
}

// copyStore copies every memory of the input into the output as the
// dream's session (one version each, attributed to it), refusing an input
// over MaxInputBytes.
func (r *Runner) copyStore(ctx context.Context, from, to string) *outcome {
	var total int64
	items := trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return r.svc.ListMemories(ctx, from, trove.ListMemoriesParams{View: trove.ViewFull, Cursor: cursor, Limit: 20})
	})
	for it, err := range items {
		if err != nil {
			return r.internal(ctx, "reading the input store", err)
		}
		if it.Memory == nil {
			continue
		}
		total += int64(it.Memory.SizeBytes)
		if total > r.cfg.MaxInputBytes {
			return failed(trove.DreamErrStoreTooLarge, "the input memory store holds more than %d bytes, the dream's limit", r.cfg.MaxInputBytes)
		}
		if _, err := r.svc.CreateMemory(ctx, to, trove.CreateMemoryParams{Path: it.Memory.Path, Content: *it.Memory.Content}); err != nil {
			return r.internal(ctx, "copying "+it.Memory.Path, err)
		}
	}
	return nil
}

// checkSize refuses an in-place input over MaxInputBytes.
func (r *Runner) checkSize(ctx context.Context, storeID string) *outcome {
	var total int64
	items := trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return r.svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Cursor: cursor, Limit: 100})
	})
	for it, err := range items {
		if err != nil {
			return r.internal(ctx, "reading the input store", err)
		}
		if it.Memory != nil {
			total += int64(it.Memory.SizeBytes)
		}
		if total > r.cfg.MaxInputBytes {
			return failed(trove.DreamErrStoreTooLarge, "the input memory store holds more than %d bytes, the dream's limit", r.cfg.MaxInputBytes)
		}
	}
	return nil
}

// converse runs the Messages loop: the memory tool over the output store
// (as the dream's session, whose principal ctx carries) and the transcript
// tool, until the model stops calling tools or a budget runs out.
func (r *Runner) converse(ctx context.Context, st *state, outputID string, owner *trove.Principal) *outcome {
	d := st.dream
	tool := memtool.New(storefs.New(r.svc, outputID, storefs.Options{Limits: r.svc.Limits()}), memtool.Options{
		OnInternalError: func(cmd string, err error) {
			r.log.Error("dream: memory tool", "dream_id", d.ID, "command", cmd, "err", err)
		},
	})
	ts := &transcripts{svc: r.svc, principal: owner, sessions: d.SessionIDs, pageBytes: r.cfg.TranscriptPage}
	system := SystemPrompt
	if d.Instructions != "" {
		system += "\n\n## Instructions for this dream\n\n" + d.Instructions
	}
	first := fmt.Sprintf("Consolidate the memory store mounted at /memories. The input sessions are: %s. Start with the inventory.",
		strings.Join(d.SessionIDs, ", "))
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(first))}
	// The dream's own conversation is its session's transcript, for review.
	rec := &claude.Recorder{Append: func(ctx context.Context, evs []trove.NewSessionEvent) ([]trove.SessionEvent, error) {
		return r.svc.AppendEvents(ctx, st.sessionID, evs)
	}}
	rec.Prompt(ctx, first)
	tools := []anthropic.ToolUnionParam{claude.ToolParam(), {OfTool: &anthropic.ToolParam{
		Name:        transcriptTool,
		Description: anthropic.String("Read one input session's transcript (read-only), a page at a time. Returns the text from offset and says where the next page starts."),
		InputSchema: anthropic.ToolInputSchemaParam{
			Properties: map[string]any{
				"session_id": map[string]any{"type": "string", "description": "an input session ID (sesn_…)"},
				"offset":     map[string]any{"type": "integer", "description": "byte offset to start from; 0 for the beginning"},
			},
			Required: []string{"session_id"},
		},
	}}}
	for turn := 0; ; turn++ {
		if turn >= r.cfg.Budget.MaxTurns {
			return failed(trove.DreamErrBudgetExhausted, "the dream used its budget of %d model turns before finishing; the output keeps what was written", r.cfg.Budget.MaxTurns)
		}
		if n := st.tokens(); n >= r.cfg.Budget.MaxTokens {
			return failed(trove.DreamErrBudgetExhausted, "the dream used %d tokens, past its budget of %d, before finishing; the output keeps what was written", n, r.cfg.Budget.MaxTokens)
		}
		msg, err := r.cfg.Claude.Messages.New(ctx, anthropic.MessageNewParams{
			Model:     anthropic.Model(d.Model),
			MaxTokens: r.cfg.Budget.MaxOutputTokens,
			System:    []anthropic.TextBlockParam{{Text: system}},
			Messages:  msgs,
			Tools:     tools,
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return failed(trove.DreamErrModelRequestFailed, "the Messages API request failed: %s", modelError(err))
		}
		st.addUsage(msg.Usage)
		rec.Message(ctx, msg)
		msgs = append(msgs, msg.ToParam())
		if msg.StopReason != anthropic.StopReasonToolUse {
			if err := rec.Err(); err != nil {
				r.log.Warn("dream: its conversation was not fully recorded in its session", "dream_id", d.ID, "err", err)
			}
			if n := st.tokens(); n > r.cfg.Budget.MaxTokens {
				return failed(trove.DreamErrBudgetExhausted, "the dream used %d tokens, past its budget of %d; the output keeps what was written", n, r.cfg.Budget.MaxTokens)
			}
			return &outcome{status: trove.DreamCompleted}
		}
		var results []anthropic.ContentBlockParamUnion
		for _, b := range msg.Content {
			if b.Type != "tool_use" {
				continue
			}
			u := b.AsToolUse()
			var res memtool.Result
			switch u.Name {
			case claude.ToolName:
				res = tool.Execute(ctx, u.Input)
			case transcriptTool:
				text, isErr := ts.read(ctx, u.Input)
				res = memtool.Result{IsError: isErr, Content: []memtool.Block{{Type: memtool.BlockText, Text: text}}}
			default:
				res = memtool.Result{IsError: true, Content: []memtool.Block{{Type: memtool.BlockText,
					Text: fmt.Sprintf("Error: unknown tool %q; the tools are %q and %q", u.Name, claude.ToolName, transcriptTool)}}}
			}
			rec.ToolResult(ctx, u, res)
			results = append(results, claude.ResultBlock(u.ID, res))
		}
		if ctx.Err() != nil {
			return nil
		}
		if len(results) == 0 {
			return failed(trove.DreamErrModelRequestFailed, "the model stopped for tool_use without a tool_use block")
		}
		msgs = append(msgs, anthropic.NewUserMessage(results...))
	}
}

// modelError describes a Messages API failure without secrets: the status
// and the API's error type and message.
func modelError(err error) string {
	var apierr *anthropic.Error
	if errors.As(err, &apierr) {
		return fmt.Sprintf("%d %s", apierr.StatusCode, strings.TrimSpace(apierr.RawJSON()))
	}
	return "the model API could not be reached"
}
