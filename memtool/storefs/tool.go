package storefs

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// Tool runs memory tool calls through a memtool.Tool over a store backend
// (FS or Mux) and turns a refusal by the store (archived store, memory
// limit, read-only access, a path the store does not accept) into an error
// result with the store's client-safe message instead of the engine's
// generic "storage error". (An str_replace or insert that lost a race with
// another writer is re-applied by the engine itself: see
// memtool.Options.EditAttempts.)
//
// Tool is safe for concurrent use.
type Tool struct {
	engine *memtool.Tool
}

// NewTool returns a Tool running the memtool engine over fsys with opt.
func NewTool(fsys memtool.FS, opt memtool.Options) *Tool {
	return &Tool{engine: memtool.New(fsys, opt)}
}

// Engine returns the underlying memtool engine.
func (t *Tool) Engine() *memtool.Tool { return t.engine }

// callKey carries the per-call recorder in the context.
type callKey struct{}

// recorder notes what the backend saw during one tool call.
type recorder struct {
	mu       sync.Mutex
	storeErr *trove.Error
}

func recorderFrom(ctx context.Context) *recorder {
	r, _ := ctx.Value(callKey{}).(*recorder)
	return r
}

// noteStoreError keeps the first store refusal whose message the model
// should see.
func noteStoreError(ctx context.Context, err error) {
	r := recorderFrom(ctx)
	if r == nil {
		return
	}
	var te *trove.Error
	if !errors.As(err, &te) {
		return
	}
	switch te.Code {
	case trove.EINVALID, trove.EFORBIDDEN, trove.ETOOLARGE, trove.ENOTFOUND, trove.EUNAUTHENTICATED:
	default:
		return
	}
	r.mu.Lock()
	if r.storeErr == nil {
		r.storeErr = te
	}
	r.mu.Unlock()
}

func (r *recorder) snapshot() *trove.Error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.storeErr
}

// callInfo is the part of the input Tool needs.
type callInfo struct {
	Command string `json:"command"`
	Path    string `json:"path"`
	OldPath string `json:"old_path"`
}

// Execute runs one tool call (the raw JSON input of a tool_use block) and
// returns its result; like memtool.Tool.Execute it never returns a Go error.
func (t *Tool) Execute(ctx context.Context, input []byte) memtool.Result {
	var ci callInfo
	_ = json.Unmarshal(input, &ci) // the engine reports bad input itself
	path := ci.Path
	if ci.Command == "rename" {
		path = ci.OldPath
	}
	rec := &recorder{}
	res := t.engine.Execute(context.WithValue(ctx, callKey{}, rec), input)
	serr := rec.snapshot()
	if res.IsError && serr != nil {
		msg := "Error: The memory store refused the " + ci.Command + " of " + path + ": " + serr.Message + "."
		if ci.Command != "delete" && ci.Command != "rename" {
			msg += " Nothing was written."
		}
		return errorResult(msg)
	}
	return res
}

func errorResult(s string) memtool.Result {
	return memtool.Result{Content: []memtool.Block{{Type: memtool.BlockText, Text: s}}, IsError: true}
}
