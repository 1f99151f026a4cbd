// Package claude connects memtool to the Anthropic Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2): the memory_20250818 tool
// definition, the conversion of a tool_use block into a tool_result block,
// and a Runner that drives the Messages API until the model stops asking for
// tools. It uses the GA Messages types (MemoryTool20250818Param,
// ToolResultBlockParam), which exist in v2 and need no beta header.
//
// memtool itself does not import the SDK; only this package does.
package claude

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
)

// ToolName is the name the model uses for the memory tool.
const ToolName = "memory"

// DefaultModel is the model used when Runner.Model is empty: Trove's one
// agent default (trove.DefaultAgentModel, kept current in models.go).
const DefaultModel anthropic.Model = trove.DefaultAgentModel

// ToolParam returns the tool definition to put in MessageNewParams.Tools:
// {"type": "memory_20250818", "name": "memory"}.
func ToolParam() anthropic.ToolUnionParam {
	return anthropic.ToolUnionParam{OfMemoryTool20250818: &anthropic.MemoryTool20250818Param{}}
}

// ResultBlock turns a memtool.Result into the tool_result block answering
// toolUseID. Text becomes a text content block; an image (successes only:
// the API accepts only text in error results) becomes an image block with a
// base64 source. is_error is set only on errors, as the reference runner
// does.
func ResultBlock(toolUseID string, r memtool.Result) anthropic.ContentBlockParamUnion {
	tr := anthropic.ToolResultBlockParam{ToolUseID: toolUseID}
	if r.IsError {
		tr.IsError = anthropic.Bool(true)
		tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: r.Text()}}}
		return anthropic.ContentBlockParamUnion{OfToolResult: &tr}
	}
	for _, b := range r.Content {
		switch b.Type {
		case memtool.BlockImage:
			tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: &anthropic.ImageBlockParam{
				Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
					Data:      b.Data,
					MediaType: anthropic.Base64ImageSourceMediaType(b.MediaType),
				}},
			}})
		default:
			tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: b.Text}})
		}
	}
	return anthropic.ContentBlockParamUnion{OfToolResult: &tr}
}

// Execute runs one tool_use block on tool and returns its tool_result
// block. A block for another tool gets an error result naming the tool.
func Execute(ctx context.Context, tool *memtool.Tool, block anthropic.ToolUseBlock) anthropic.ContentBlockParamUnion {
	return ResultBlock(block.ID, executeResult(ctx, tool, block))
}

func executeResult(ctx context.Context, tool *memtool.Tool, block anthropic.ToolUseBlock) memtool.Result {
	if block.Name != ToolName {
		return memtool.Result{IsError: true, Content: []memtool.Block{{
			Type: memtool.BlockText,
			Text: fmt.Sprintf("Error: Unknown tool %q: only the %q tool is available.", block.Name, ToolName),
		}}}
	}
	return tool.Execute(ctx, block.Input)
}

// ErrMaxTurns is returned by Runner.Run when the model still asks for tools
// after MaxTurns requests.
var ErrMaxTurns = errors.New("claude: maximum number of turns reached")

// Runner runs a conversation with the memory tool: it sends the messages,
// executes every memory tool call of the reply (all calls of one turn run
// concurrently, as the SDKs' tool runners do; memtool's locking keeps them
// consistent), sends the results back, and repeats until the stop reason is
// not "tool_use".
type Runner struct {
	Client *anthropic.Client
	Tool   *memtool.Tool
	// Model defaults to DefaultModel; MaxTokens to 4096; MaxTurns (the
	// number of requests) to 20.
	Model     anthropic.Model
	MaxTokens int64
	MaxTurns  int
	// System is an optional system prompt.
	System string
	// OnMessage, if set, is called with every reply as it arrives.
	OnMessage func(*anthropic.Message)
	// OnToolResult, if set, is called after each tool call (concurrently
	// for the calls of one turn) with the call and its result.
	OnToolResult func(use anthropic.ToolUseBlock, result memtool.Result)
}

// Run continues the conversation messages and returns the final reply and
// the whole conversation (messages, replies and tool results). On
// ErrMaxTurns the last reply and conversation are returned too.
func (r *Runner) Run(ctx context.Context, messages []anthropic.MessageParam) (*anthropic.Message, []anthropic.MessageParam, error) {
	model, maxTokens, maxTurns := r.Model, r.MaxTokens, r.MaxTurns
	if model == "" {
		model = DefaultModel
	}
	if maxTokens <= 0 {
		maxTokens = 4096
	}
	if maxTurns <= 0 {
		maxTurns = 20
	}
	msgs := append([]anthropic.MessageParam(nil), messages...)
	var last *anthropic.Message
	for range maxTurns {
		params := anthropic.MessageNewParams{
			Model:     model,
			MaxTokens: maxTokens,
			Messages:  msgs,
			Tools:     []anthropic.ToolUnionParam{ToolParam()},
		}
		if r.System != "" {
			params.System = []anthropic.TextBlockParam{{Text: r.System}}
		}
		msg, err := r.Client.Messages.New(ctx, params)
		if err != nil {
			return last, msgs, err
		}
		last = msg
		if r.OnMessage != nil {
			r.OnMessage(msg)
		}
		msgs = append(msgs, msg.ToParam())
		if msg.StopReason != anthropic.StopReasonToolUse {
			return msg, msgs, nil
		}
		results := r.runTools(ctx, msg)
		if len(results) == 0 {
			return msg, msgs, fmt.Errorf("claude: stop_reason is tool_use but the reply has no tool_use block")
		}
		msgs = append(msgs, anthropic.NewUserMessage(results...))
	}
	return last, msgs, ErrMaxTurns
}

// runTools executes the reply's tool_use blocks concurrently and returns the
// tool_result blocks in the order of the calls.
func (r *Runner) runTools(ctx context.Context, msg *anthropic.Message) []anthropic.ContentBlockParamUnion {
	var uses []anthropic.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			uses = append(uses, b.AsToolUse())
		}
	}
	results := make([]anthropic.ContentBlockParamUnion, len(uses))
	var wg sync.WaitGroup
	for i, u := range uses {
		wg.Go(func() {
			res := executeResult(ctx, r.Tool, u)
			if r.OnToolResult != nil {
				r.OnToolResult(u, res)
			}
			results[i] = ResultBlock(u.ID, res)
		})
	}
	wg.Wait()
	return results
}
