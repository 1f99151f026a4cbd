// Package memtool executes Claude's client-side memory tool
// (memory_20250818): view, create, str_replace, insert, delete and rename on
// paths under /memories, over a small storage interface (FS) with three
// implementations planned: a host directory (DirFS: directory descriptors on
// Unix systems, os.Root alone on Windows), memory
// (MemFS), and a Trove memory store (package storefs).
//
// Use:
//
//	fsys, _ := memtool.NewDirFS("./memories")
//	tool := memtool.New(fsys, memtool.Options{})
//	res := tool.Execute(ctx, toolUse.Input) // res.Content, res.IsError
//
// Package memtool/claude turns results into Anthropic SDK tool_result blocks
// and runs a conversation; memtool/memtooltest is the conformance suite every
// FS must pass.
//
// # Target behaviour
//
// The strings are those of the memory tool documentation (the seed,
// seeds/memory-tool.id.md) byte for byte, including whether an error carries
// the "Error: " prefix; where the documentation is silent the reference is
// the TypeScript SDK's BetaLocalFilesystemMemoryTool 1.14.0
// (spec/memory-tool-reference.md §4), except for its defects (§7), which are
// fixed. Errors of Trove's own invention are "Error: " followed by a precise
// message that says what to do. Every error result has IsError set, holds
// one text block and never contains a host path.
//
// # Deviations from the TypeScript reference
//
//	| Situation                              | TypeScript 1.14.0                                  | memtool                                                                       |
//	|----------------------------------------|----------------------------------------------------|-------------------------------------------------------------------------------|
//	| view of a missing path                 | "Error: The path … does not exist. Please …"       | seed: same text without "Error: "                                             |
//	| too many lines                         | "Error: File … has too many lines (N). Maximum is 999,999 lines." (locale) | seed: "File {path} exceeds maximum line limit of 999,999 lines." |
//	| line count for the limit               | split("\n") elements (999,999 "\n"-ended lines refused) | lines; a final "\n" does not start a line                               |
//	| str_replace/insert on a directory      | "… is not a file."                                 | seed: that command's "does not exist" error                                   |
//	| not found / multiple occurrences       | "Error: " prefix                                   | seed: no prefix                                                               |
//	| insert on a missing file               | "… does not exist. Please provide a valid path."   | seed: "Error: The path {path} does not exist"                                 |
//	| str_replace matching                   | per line: multi-line old_str never matches; two hits on a line pass | whole content; every (overlapping) occurrence counts; lines listed per occurrence (at most 100, then "... (N more)") |
//	| str_replace empty old_str              | prepends / "multiple" error                        | refused                                                                       |
//	| str_replace without new_str            | writes "undefined"                                 | deletes old_str (the docs)                                                    |
//	| snippet window                         | lines L-2..L+2                                     | L-2..L+2+(newlines in new_str), cut at 16,000 characters                      |
//	| input types                            | coerced ("1", 2.5, missing insert_line = 0)        | validated: strings must be strings, numbers integers, required fields present |
//	| view_range                             | clamps, ignores bad shapes, fractional numbers     | [a,b] or [a,-1] with 1 <= a <= lines and b >= a; clear errors otherwise; b past the end is clamped |
//	| long text view                         | whole file                                         | cut at 16,000 characters (code points) on a line boundary with a notice giving the next view_range; a first line that does not fit is cut inside, and the notice says view cannot show its rest (split it with str_replace) |
//	| .png/.jpg/.jpeg                        | decoded as text                                    | image block (base64) after checking the magic bytes                           |
//	| binary / invalid UTF-8                 | lossy text                                         | error (view, str_replace, insert)                                             |
//	| file size                              | unlimited                                          | writes above Options.MaxFileSize (102,400 bytes) refused; reads above MaxReadSize (10 MiB) refused |
//	| secrets                                | written                                            | refused by Options.SecretFilter, naming the kind, never echoing it            |
//	| path prefix                            | "/memoriesX" means /memories/X                     | exactly /memories or /memories/…                                              |
//	| ".", "..", "//", "\", %2e/%2f/%5c/%25/%00, control chars, U+2028/9 | mostly accepted, resolved lexically | refused (ParsePath)                                          |
//	| invisible or space-like characters (U+200B, U+FE0F, U+034F, U+00A0, bidi controls) | accepted | refused (ParsePath; the store's rule, so look-alike names cannot coexist) |
//	| path / name length                     | OS errors with host paths                          | 1,024 / 255 bytes, clear errors                                               |
//	| trailing "/"                           | dropped (create "/memories/d/" makes a file)       | allowed for view and delete of a directory only                               |
//	| listing of "/memories/"                | children as "/memories//a"                         | children as "/memories/a" (the first line echoes the raw path)                |
//	| sizes                                  | integral values without a decimal ("4K", "1K")     | seed's examples ("4.0K", "1.5K", "1.2M"): under 1024 "{n}B", else one decimal, half up; 1023.95K+ = "1.0M" |
//	| directory sizes                        | inode size (filesystem-dependent)                  | always 4096 ("4.0K")                                                          |
//	| sizes >= 1 TiB                         | unit "undefined"                                   | shown in T                                                                    |
//	| listing entries                        | names with "\n" printed raw; escaping links skipped, in-root links followed | names no valid path can address are skipped; links and special files are not listed |
//	| listing length                         | unbounded                                          | cut at 16,000 characters with a notice                                        |
//	| symbolic links                         | followed inconsistently                            | opaque: never followed; delete/rename act on the link                         |
//	| delete root spellings                  | only exact strings compared                        | "/memories" and "/memories/" refused; other spellings are invalid paths       |
//	| rename into itself                     | raw EINVAL with host paths                         | "Error: Cannot rename … the destination is inside the source. …"              |
//	| rename with missing source             | creates destination parents first                  | no side effect                                                                |
//	| rename destination check               | check then rename (races clobber)                  | renameat2(RENAME_NOREPLACE) / renameatx_np(RENAME_EXCL) / link+unlink, plus engine locks (DirFS) |
//	| create                                 | O_EXCL into the final name; empty file left on failure | validated first; temp file + fsync + no-replace rename + directory fsync  |
//	| create on an existing file             | error                                              | error by default; Options.Overwrite replaces ("File overwritten successfully at: {path}") |
//	| concurrent calls                       | none: lost updates, double renames                 | per-path locks (see Tool)                                                     |
//	| writes racing another process          | last writer wins                                   | conditional writes (Version); a str_replace/insert that lost is re-applied to the fresh content if it still applies cleanly (Options.EditAttempts), else "Error: {path} was changed by another writer …" |
//	| root removed externally                | every call fails with a raw ENOENT                 | re-created (DirFS)                                                            |
//	| unknown / missing command              | "{cmd} not implemented", prototype names dispatch  | "Error: Unknown command \"{cmd}\": use one of …"                              |
//	| OS errors                              | raw Node messages with absolute paths              | mapped; a backend's *Refusal shows its message ("Error: The memory store refused the create of …: …"); anything else unexpected is a generic storage error (details to Options.OnInternalError) |
//
// Unchanged on purpose: the listing header and format, depth 2, hidden and
// node_modules skipped (but fully usable), UTF-16 code-unit order of names
// (JavaScript's default sort: "10.txt" < "9.txt" < "B" < "a", and U+1F600
// before U+FF5E), the integer size formula rounding half up for
// non-integral values (1280 B = "1.3K"), "%6d\t" numbering with lines split on "\n" only (CR kept), the
// insert semantics (n = number of "\n"-split elements, one trailing "\n" of
// insert_text stripped, lines joined with "\n", so inserting at n after a
// final newline leaves a blank line), "$" kept literal, the check order of
// rename (root, destination exists, source missing), rename X to X reporting
// the destination exists.
//
// # Symbolic links
//
// Links are opaque. A path whose final component is a link cannot be viewed
// or edited, and create on it reports that the file exists; a path through a
// link is refused with "Error: The path {path} is or goes through a symbolic
// link, which the memory tool does not follow. …"; delete removes the link,
// rename moves the link; listings omit links. DirFS resolves parents with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) (or a component walk with
// O_NOFOLLOW, as on macOS), or checks every existing ancestor with lstat and
// then operates through os.Root (everything, on Windows), so even a link
// swapped in concurrently by another process cannot lead outside the root.
//
// # Access times and expiry
//
// Tool.Sweep deletes files not accessed for a given duration. view, create,
// str_replace and insert record the access with Toucher.Touch at
// Options.Now() (view when it reads a file, even if it then refuses to show
// it); DirFS stores it as the file's atime (set explicitly: on the
// descriptor's directory right after the read, and on the temporary file
// before it is synced for a write, through TouchingFS, so no separate
// path resolution), MemFS in memory.
package memtool
