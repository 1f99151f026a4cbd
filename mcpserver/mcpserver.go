// Package mcpserver exposes Trove memory stores to any MCP client. It
// serves two tools:
//
//   - memory: Claude's memory tool (memory_20250818) over the stores, with
//     the same commands, the same input shape and the same result strings as
//     the memtool engine (it is the engine, over memtool/storefs). Failures
//     are tool results with isError set, MCP's convention, so the model can
//     read them and correct itself.
//   - search: read-only search over memory paths and content: a query
//     string, an optional path prefix and a limit; it returns the matching
//     paths with line-numbered snippets.
//
// The server is bound to one store (then /memories is that store) or to
// several, such as a session's stores (then /memories/<slug>/ is each
// store). It talks to the stores only through trove.Services, so it runs
// over a local database (core.Service) or a remote server (httpapi.Client).
// Every write is one memory version attributed to the caller (the principal
// in Options, or the remote credential).
package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
)

// Mount is one store served by the server. Slug names its directory under
// /memories when the server has several mounts; it must be a valid single
// path name (trove.Slug output is) and unique.
type Mount struct {
	StoreID string
	Slug    string
}

// Options configure a Server.
type Options struct {
	// Name and Version identify the server to clients; "" means "trove" and
	// "dev".
	Name    string
	Version string
	// Principal, when set, is put in the context of every tool call, which a
	// local core.Service needs to attribute writes (a remote
	// httpapi.Client authenticates with its own credential instead).
	Principal *trove.Principal
	// Tool configures the memory tool engine.
	Tool memtool.Options
	// Limits are the store limits paths are checked against; the zero value
	// means trove.DefaultLimits().
	Limits trove.Limits
	// Logger receives internal errors; nil discards.
	Logger *slog.Logger
	// Mounted serves even a single store under /memories/<slug>/, as a
	// session's stores are laid out; by default one store is /memories.
	Mounted bool
}

// Server is an MCP server over memory stores. It is safe for concurrent use
// by any number of MCP sessions.
type Server struct {
	svc    trove.Services
	mounts []Mount
	single bool
	opt    Options
	tool   *memtool.Tool
	mcp    *mcp.Server
}

// ToolNames are the tools the server offers.
var ToolNames = []string{"memory", "search"}

// New returns a server over the given stores. It returns EINVALID for no
// mounts, a duplicate store or slug, or a slug that is not a valid name.
func New(svc trove.Services, mounts []Mount, opt Options) (*Server, error) {
	if len(mounts) == 0 {
		return nil, trove.Errorf(trove.EINVALID, "mcpserver: at least one store is needed")
	}
	if opt.Limits.MaxPathBytes == 0 {
		opt.Limits = trove.DefaultLimits()
	}
	if opt.Name == "" {
		opt.Name = "trove"
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, mounts: mounts, single: len(mounts) == 1 && !opt.Mounted, opt: opt}
	var fsys memtool.FS
	if s.single {
		fsys = storefs.New(svc, mounts[0].StoreID, storefs.Options{Limits: opt.Limits})
	} else {
		byslug := map[string]*storefs.FS{}
		stores := map[string]bool{}
		for _, m := range mounts {
			if p, err := memtool.ParsePath(memtool.RootPath + "/" + m.Slug); err != nil || strings.Contains(p.Rel, "/") || p.Rel == "" {
				return nil, trove.Errorf(trove.EINVALID, "mcpserver: invalid mount name %q", m.Slug)
			}
			if byslug[m.Slug] != nil || stores[m.StoreID] {
				return nil, trove.Errorf(trove.EINVALID, "mcpserver: store %s or mount name %q given twice", m.StoreID, m.Slug)
			}
			stores[m.StoreID] = true
			byslug[m.Slug] = storefs.New(svc, m.StoreID, storefs.Options{Limits: opt.Limits})
		}
		fsys = storefs.NewMux(byslug)
	}
	if opt.Tool.OnInternalError == nil {
		log := opt.Logger
		opt.Tool.OnInternalError = func(cmd string, err error) { log.Error("memory tool storage error", "command", cmd, "err", err) }
	}
	// Every call acts for the one principal the server runs as, so edits
	// of one file in flight together can share a write.
	opt.Tool.CombineEdits = true
	s.tool = memtool.New(fsys, opt.Tool)

	s.mcp = mcp.NewServer(&mcp.Implementation{Name: opt.Name, Version: opt.Version}, &mcp.ServerOptions{
		Instructions: s.instructions(),
		Logger:       opt.Logger,
	})
	s.mcp.AddTool(&mcp.Tool{
		Name:        "memory",
		Description: memoryDescription,
		InputSchema: json.RawMessage(memorySchema),
		Annotations: &mcp.ToolAnnotations{Title: "Memory"},
	}, s.handleMemory)
	s.mcp.AddTool(&mcp.Tool{
		Name:        "search",
		Description: searchDescription,
		InputSchema: json.RawMessage(searchSchema),
		Annotations: &mcp.ToolAnnotations{Title: "Search memories", ReadOnlyHint: true, IdempotentHint: true},
	}, s.handleSearch)
	return s, nil
}

// MCP returns the underlying go-sdk server, to run on any transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Tool returns the memory tool the server runs.
func (s *Server) Tool() *memtool.Tool { return s.tool }

// RunStdio serves one MCP session over the process's stdin and stdout until
// the client disconnects or ctx is cancelled.
func (s *Server) RunStdio(ctx context.Context) error {
	return s.mcp.Run(ctx, &mcp.StdioTransport{})
}

// HTTPHandler returns a streamable-HTTP handler serving MCP sessions.
func (s *Server) HTTPHandler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, nil)
}

func (s *Server) ctx(ctx context.Context) context.Context {
	if s.opt.Principal != nil {
		return trove.WithPrincipal(ctx, s.opt.Principal)
	}
	return ctx
}

func (s *Server) instructions() string {
	if s.single {
		return "Memory is a directory of text files at " + memtool.RootPath + ", stored in a Trove memory store. Use the memory tool to view, create and edit files, and search to find them by content."
	}
	return "Memory is a directory of text files at " + memtool.RootPath + "; each subdirectory is one Trove memory store: " + s.mountDirs() + ". Use the memory tool to view, create and edit files, and search to find them by content."
}

// mountRoot is the tool path of a mount's directory (several mounts).
func mountRoot(slug string) string { return memtool.RootPath + "/" + slug }

// mountDirs lists the mounts' directories, "/memories/<slug>/, …".
func (s *Server) mountDirs() string {
	dirs := make([]string, len(s.mounts))
	for i, m := range s.mounts {
		dirs[i] = mountRoot(m.Slug) + "/"
	}
	return strings.Join(dirs, ", ")
}

// handleMemory runs one memory tool call.
func (s *Server) handleMemory(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	// Decoding would replace each byte that is not UTF-8 with U+FFFD and
	// store altered text: refuse the call instead, as the store would.
	if err := trove.CheckContentUTF8Bytes(args); err != nil {
		return errorResult("%s", trove.ErrorMessage(err)), nil
	}
	return toMCP(s.tool.Execute(s.ctx(ctx), args)), nil
}

// Execute runs one memory tool call, given as its JSON input, as the
// server's principal, outside MCP (trove tool --store). Input that is not
// valid UTF-8 is refused as the MCP tool refuses it: decoding it would put
// U+FFFD where the caller's bytes were.
func (s *Server) Execute(ctx context.Context, input []byte) memtool.Result {
	if err := trove.CheckContentUTF8Bytes(input); err != nil {
		return memtool.Result{IsError: true, Content: []memtool.Block{{Type: memtool.BlockText, Text: "Error: " + trove.ErrorMessage(err)}}}
	}
	return s.tool.Execute(s.ctx(ctx), input)
}

// toMCP converts an engine result.
func toMCP(r memtool.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{}}
	for _, b := range r.Content {
		switch b.Type {
		case memtool.BlockImage:
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				out.Content = append(out.Content, &mcp.TextContent{Text: fmt.Sprintf("[image %s could not be encoded]", b.MediaType)})
				continue
			}
			out.Content = append(out.Content, &mcp.ImageContent{Data: data, MIMEType: b.MediaType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: b.Text})
		}
	}
	return out
}

func errorResult(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "Error: " + fmt.Sprintf(format, args...)}}}
}

const memoryDescription = `Persistent memory: a directory of text files under /memories that outlives this conversation, shared with other agents and reviewed by people. Commands:
- view {path, view_range?}: list a directory (2 levels) or show a file with line numbers; view_range [start, end] or [start, -1].
- create {path, file_text}: create a file (fails if it exists).
- str_replace {path, old_str, new_str}: replace text that occurs exactly once.
- insert {path, insert_line, insert_text}: insert text after line insert_line (0 = at the top).
- delete {path}: delete a file or a directory with everything in it.
- rename {old_path, new_path}: move a file or directory (fails if the destination exists).
View your memory directory before doing anything else, and keep it organised.`

const memorySchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert", "delete", "rename"], "description": "The operation."},
    "path": {"type": "string", "description": "A path under /memories (view, create, str_replace, insert, delete)."},
    "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2, "description": "view: [start_line, end_line], or [start_line, -1] for the rest of the file."},
    "file_text": {"type": "string", "description": "create: the full content of the new file."},
    "old_str": {"type": "string", "description": "str_replace: the exact text to replace; it must occur exactly once."},
    "new_str": {"type": "string", "description": "str_replace: the replacement (omit to delete old_str)."},
    "insert_line": {"type": "integer", "description": "insert: the line after which to insert; 0 inserts at the top."},
    "insert_text": {"type": "string", "description": "insert: the text to insert."},
    "old_path": {"type": "string", "description": "rename: the file or directory to move."},
    "new_path": {"type": "string", "description": "rename: the destination, which must not exist."}
  },
  "required": ["command"]
}`
