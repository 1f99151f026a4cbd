package storefs

import "github.com/trovehq/trove/memtool"

// Tool is the memory tool engine. It used to wrap the engine to re-apply
// edits that lost a race and to show store refusals; the engine now does
// both for every backend (memtool.Options.EditAttempts, memtool.Refusal).
//
// Deprecated: use memtool.Tool.
type Tool = memtool.Tool

// NewTool returns memtool.New(fsys, opt).
//
// Deprecated: use memtool.New.
func NewTool(fsys memtool.FS, opt memtool.Options) *Tool { return memtool.New(fsys, opt) }
