package storefs

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// DefaultAttempts is how many times Tool runs an edit that keeps losing
// races before it gives up with the engine's conflict message.
const DefaultAttempts = 10

// Tool runs memory tool calls through a memtool.Tool over a store backend
// (FS or Mux) and adds what only the store needs:
//
//   - An str_replace or insert whose conditional write lost a race with
//     another writer (content_sha256 precondition failed) is re-run on the
//     fresh content. The re-run re-checks the edit: str_replace applies only
//     if old_str still occurs exactly once, insert only if the line is still
//     in range. If it no longer applies, the result is an error telling the
//     model the file changed under it and to view it again; nothing is
//     written. Nothing is ever overwritten without the precondition.
//   - A refusal by the store (archived store, memory limit, read-only
//     access, a path the store does not accept) becomes an error result with
//     the store's client-safe message instead of the engine's generic
//     "storage error".
//
// Tool is safe for concurrent use.
type Tool struct {
	engine   *memtool.Tool
	attempts int
}

// NewTool returns a Tool running the memtool engine over fsys with opt.
func NewTool(fsys memtool.FS, opt memtool.Options) *Tool {
	return &Tool{engine: memtool.New(fsys, opt), attempts: DefaultAttempts}
}

// Engine returns the underlying memtool engine.
func (t *Tool) Engine() *memtool.Tool { return t.engine }

// callKey carries the per-call recorder in the context.
type callKey struct{}

// recorder notes what the backend saw during one tool call.
type recorder struct {
	mu       sync.Mutex
	races    int
	storeErr *trove.Error
}

func recorderFrom(ctx context.Context) *recorder {
	r, _ := ctx.Value(callKey{}).(*recorder)
	return r
}

// recordRace notes that a conditional write lost a race.
func recordRace(ctx context.Context) {
	if r := recorderFrom(ctx); r != nil {
		r.mu.Lock()
		r.races++
		r.mu.Unlock()
	}
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

func (r *recorder) snapshot() (int, *trove.Error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.races, r.storeErr
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
	run := func() (memtool.Result, int, *trove.Error) {
		rec := &recorder{}
		res := t.engine.Execute(context.WithValue(ctx, callKey{}, rec), input)
		races, serr := rec.snapshot()
		return res, races, serr
	}
	res, races, serr := run()
	if races > 0 && (ci.Command == "str_replace" || ci.Command == "insert") {
		for i := 1; i < t.attempts && races > 0; i++ {
			if !backoff(ctx, i) {
				break
			}
			res, races, serr = run()
			if races == 0 && res.IsError {
				return errorResult("Error: " + path + " was changed by another writer while this " + ci.Command +
					" ran, and the edit no longer applies to the new content: " + res.Text() +
					" Nothing was written; view the file again and retry.")
			}
		}
	}
	if res.IsError && serr != nil {
		msg := "Error: The memory store refused the " + ci.Command + " of " + path + ": " + serr.Message + "."
		if ci.Command != "delete" && ci.Command != "rename" {
			msg += " Nothing was written."
		}
		return errorResult(msg)
	}
	return res
}

// backoff waits a short random time growing with the attempt, so that two
// writers that keep colliding on one memory drift apart. It returns false if
// ctx ended.
func backoff(ctx context.Context, attempt int) bool {
	d := time.Duration(rand.Int64N(int64(attempt) * int64(2*time.Millisecond)))
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func errorResult(s string) memtool.Result {
	return memtool.Result{Content: []memtool.Block{{Type: memtool.BlockText, Text: s}}, IsError: true}
}
