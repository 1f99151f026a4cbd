package memtool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults for Options.
const (
	// DefaultMaxFileSize is the largest file a write may produce: the memory
	// stores API's content limit (100 kB).
	DefaultMaxFileSize = 102400
	// DefaultMaxReadSize is the largest file view will read (images
	// included).
	DefaultMaxReadSize = 10 << 20
	// DefaultMaxViewChars is where a text view is cut, as the tool
	// description promises the model.
	DefaultMaxViewChars = 16000
	// DefaultEditAttempts is the default Options.EditAttempts.
	DefaultEditAttempts = 10
	// MaxLines is the largest number of lines a file may have to be viewed.
	MaxLines = 999999
)

// Options configure a Tool. The zero value gives the reference behaviour
// with Trove's guards at their defaults.
type Options struct {
	// Overwrite makes create replace an existing file instead of returning
	// "Error: File {path} already exists" (the reference behaviour). An
	// existing directory is never replaced.
	Overwrite bool
	// MaxFileSize is the largest content, in bytes, that create,
	// str_replace or insert may write. 0 means DefaultMaxFileSize, a
	// negative value means no limit.
	MaxFileSize int64
	// MaxReadSize is the largest file, in bytes, that view, str_replace and
	// insert read. 0 means DefaultMaxReadSize, negative means no limit.
	MaxReadSize int64
	// MaxViewChars is the number of characters (Unicode code points) after
	// which a text view or an edit snippet is cut. 0 means
	// DefaultMaxViewChars, negative means no limit.
	MaxViewChars int
	// SecretFilter inspects text about to be written (file_text, new_str,
	// insert_text) and returns a description of the secret it contains
	// ("an AWS access key ID") or "" to allow the write. nil means
	// DetectSecret; use AllowSecrets to disable the filter.
	SecretFilter func(text string) string
	// EditAttempts is how many times str_replace or insert runs in all when
	// its conditional write keeps losing races with other writers (another
	// process, another agent on the same store): after a lost race the
	// edit is re-applied to the fresh content if it still applies cleanly
	// (old_str still occurs exactly once, the line is still in range). 0
	// means DefaultEditAttempts; 1 (or less) disables re-application.
	EditAttempts int
	// CombineEdits lets concurrent str_replace and insert calls on one
	// file share a write: the edits waiting for the file when one of them
	// gets it are applied in turn, each to the content the ones before it
	// left and each with its own result, and written as one conditional
	// write (one version in a store), under the context of the call that
	// writes them. Set it only when every caller of the Tool acts as the
	// same writer (one principal, as for an MCP server over one key), since
	// an edit may be written under another call's context.
	CombineEdits bool
	// Now is the clock used for access times and Sweep; nil means time.Now.
	Now func() time.Time
	// OnInternalError, if set, is called with storage errors the model only
	// sees as a generic message (they may contain host paths).
	OnInternalError func(command string, err error)
}

// AllowSecrets is a SecretFilter that lets everything through.
func AllowSecrets(string) string { return "" }

// Tool executes memory_20250818 tool calls against an FS. It is safe for
// concurrent use: calls that touch overlapping paths (the same file, or a
// directory and anything under it) are serialised, so a read-modify-write
// (str_replace, insert) never loses a concurrent update made through the
// same Tool, a rename locks both of its paths at once, and a delete of a
// directory excludes every write beneath it. Calls on disjoint paths run in
// parallel. Writers outside the Tool (another process, another agent on the
// same store) are caught by the FS's conditional writes: an str_replace or
// insert that loses such a race is re-applied to the fresh content when it
// still applies cleanly (see Options.EditAttempts).
type Tool struct {
	fs    FS
	opt   Options
	locks lockTable
	edits editQueue // with CombineEdits: the edits waiting for each file
}

// New returns a Tool over fsys.
func New(fsys FS, opt Options) *Tool {
	if opt.MaxFileSize == 0 {
		opt.MaxFileSize = DefaultMaxFileSize
	}
	if opt.MaxReadSize == 0 {
		opt.MaxReadSize = DefaultMaxReadSize
	}
	if opt.MaxViewChars == 0 {
		opt.MaxViewChars = DefaultMaxViewChars
	}
	if opt.SecretFilter == nil {
		opt.SecretFilter = DetectSecret
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.EditAttempts == 0 {
		opt.EditAttempts = DefaultEditAttempts
	}
	return &Tool{fs: fsys, opt: opt}
}

// FS returns the storage the tool runs on.
func (t *Tool) FS() FS { return t.fs }

// Commands lists the supported commands.
var Commands = []string{"view", "create", "str_replace", "insert", "delete", "rename"}

// Execute runs one tool call. input is the raw JSON "input" object of a
// tool_use block. Execute never panics on bad input and never returns a Go
// error: every failure is an error Result whose text tells the model what
// went wrong and what to do, and never contains a host path.
func (t *Tool) Execute(ctx context.Context, input []byte) Result {
	var in args
	// Decoding would replace each byte that is not UTF-8 with U+FFFD and
	// write altered text: refuse the call, changing nothing.
	if !utf8.Valid(input) {
		return errorf("The tool input is not valid UTF-8 (content must be valid UTF-8 text): nothing was changed.")
	}
	if err := json.Unmarshal(input, &in.m); err != nil || in.m == nil {
		return errorf("The tool input must be a JSON object with a \"command\" field (one of %s).", strings.Join(Commands, ", "))
	}
	cmd, ok, res := in.str("command", "")
	if res != nil {
		return *res
	}
	if !ok {
		return errorf("Missing required parameter \"command\": use one of %s.", strings.Join(Commands, ", "))
	}
	in.cmd = cmd
	switch cmd {
	case "view":
		return t.view(ctx, &in)
	case "create":
		return t.create(ctx, &in)
	case "str_replace":
		return t.strReplace(ctx, &in)
	case "insert":
		return t.insert(ctx, &in)
	case "delete":
		return t.delete(ctx, &in)
	case "rename":
		return t.rename(ctx, &in)
	}
	return errorf("Unknown command %s: use one of %s.", strconv.Quote(cmd), strings.Join(Commands, ", "))
}

// args gives typed access to the input object's fields.
type args struct {
	m   map[string]json.RawMessage
	cmd string
}

func jsonType(raw json.RawMessage) string {
	switch c := bytes.TrimSpace(raw); {
	case len(c) == 0:
		return "nothing"
	case c[0] == '"':
		return "a string"
	case c[0] == '[':
		return "an array"
	case c[0] == '{':
		return "an object"
	case c[0] == 't' || c[0] == 'f':
		return "a boolean"
	case c[0] == 'n':
		return "null"
	default:
		return "a number"
	}
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// str returns the string field key; ok is false when it is absent or null.
func (a *args) str(key, hint string) (s string, ok bool, res *Result) {
	raw, present := a.m[key]
	if !present || isNull(raw) {
		return "", false, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		r := errorf("Invalid parameter %q%s: expected a string, got %s.", key, a.forCmd(), jsonType(raw))
		return "", false, &r
	}
	return s, true, nil
}

func (a *args) forCmd() string {
	if a.cmd == "" {
		return ""
	}
	return " for " + a.cmd
}

// requiredStr is str with a "missing" error.
func (a *args) requiredStr(key, hint string) (string, *Result) {
	s, ok, res := a.str(key, hint)
	if res != nil {
		return "", res
	}
	if !ok {
		r := errorf("Missing required parameter %q%s: %s.", key, a.forCmd(), hint)
		return "", &r
	}
	return s, nil
}

// path parses a required path field.
func (a *args) path(key string) (Path, *Result) {
	s, res := a.requiredStr(key, "give a path under "+RootPath)
	if res != nil {
		return Path{}, res
	}
	p, err := ParsePath(s)
	if err != nil {
		r := errorf("%s", err.Error())
		return Path{}, &r
	}
	return p, nil
}

// filePath parses a path that must name a file (no trailing slash).
func (a *args) filePath(key string) (Path, *Result) {
	p, res := a.path(key)
	if res != nil {
		return p, res
	}
	if p.TrailingSlash {
		r := errorf("Invalid path %s: %s needs a file path, which cannot end with \"/\".", p.Raw, a.cmd)
		return p, &r
	}
	return p, nil
}

// integer parses a JSON number that must be an integer.
func integer(raw json.RawMessage) (int, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false // json.Number would also accept a quoted number
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && i >= -1<<40 && i <= 1<<40 {
		return int(i), true
	}
	f, err := n.Float64()
	if err != nil || f != float64(int64(f)) || f < -(1<<40) || f > 1<<40 {
		return 0, false
	}
	return int(f), true
}

// lock takes the engine's path locks; on context cancellation it returns an
// error result.
func (t *Tool) lock(ctx context.Context, exclusive bool, names ...string) (func(), *Result) {
	unlock, err := t.locks.lock(ctx, exclusive, names...)
	if err != nil {
		r := errorf("The operation was cancelled before it started (%v); nothing was changed.", err)
		return nil, &r
	}
	return unlock, nil
}

func (t *Tool) touch(ctx context.Context, name string) {
	if tc, ok := t.fs.(Toucher); ok {
		t.touchFailed(tc.Touch(ctx, name, t.opt.Now()))
	}
}

func (t *Tool) touchFailed(err error) {
	if err != nil && t.opt.OnInternalError != nil {
		t.opt.OnInternalError("touch", err)
	}
}

// readTouch reads a file for view and records the access: in one call when
// the FS is a TouchingFS (touched is then true), otherwise ReadFile alone
// and the caller touches on success.
func (t *Tool) readTouch(ctx context.Context, name string) (data []byte, touched bool, err error) {
	if tf, ok := t.fs.(TouchingFS); ok {
		data, _, touchErr, err := tf.ReadFileTouch(ctx, name, t.opt.MaxReadSize, t.opt.Now())
		if err == nil {
			t.touchFailed(touchErr)
		}
		return data, true, err
	}
	data, _, err = t.fs.ReadFile(ctx, name, t.opt.MaxReadSize)
	return data, false, err
}

// writeTouch writes a file for create, str_replace or insert and records the
// access, in one call when the FS is a TouchingFS.
func (t *Tool) writeTouch(ctx context.Context, name string, data []byte, ifMatch Version) error {
	if tf, ok := t.fs.(TouchingFS); ok {
		_, err := tf.WriteFileTouch(ctx, name, data, ifMatch, t.opt.Now())
		return err
	}
	if _, err := t.fs.WriteFile(ctx, name, data, ifMatch); err != nil {
		return err
	}
	t.touch(ctx, name)
	return nil
}

// internal maps a storage error that is none of the FS sentinels: a
// *Refusal becomes the backend's message, anything else a message without
// host detail. It is the one place backend errors reach the model.
func (t *Tool) internal(cmd string, p Path, err error) Result {
	var ref *Refusal
	if errors.As(err, &ref) {
		by := ref.By
		if by == "" {
			by = "storage"
		}
		msg := "Error: The " + by + " refused the " + cmd + " of " + p.Raw + ": " + strings.TrimSuffix(ref.Message, ".") + "."
		switch cmd {
		case "create", "str_replace", "insert":
			msg += " Nothing was written."
		}
		return errorText(msg)
	}
	if t.opt.OnInternalError != nil {
		t.opt.OnInternalError(cmd, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return errorf("The %s of %s was cancelled; it may not have completed.", cmd, p.Raw)
	}
	return errorf("The %s of %s failed because of a storage error; nothing was changed. Try again later.", cmd, p.Raw)
}

func symlinkError(p Path) Result {
	return errorf("The path %s is or goes through a symbolic link, which the memory tool does not follow. Use the path of the target instead.", p.Raw)
}

// checkWrite applies the write guards to the full new content and to the
// text the model supplied.
func (t *Tool) checkWrite(p Path, content, supplied string) *Result {
	if t.opt.MaxFileSize >= 0 && int64(len(content)) > t.opt.MaxFileSize {
		r := errorf("The content of %s would be %s bytes, more than the maximum file size of %s bytes; nothing was written. Keep memory files small: split the content into several files.", p.Raw, groupThousands(len(content)), groupThousands(int(t.opt.MaxFileSize)))
		return &r
	}
	if kind := t.opt.SecretFilter(supplied); kind != "" {
		r := errorf("Refused to write %s: the text appears to contain %s. Secrets must not be stored in memory; remove it (or replace it with a placeholder) and try again.", p.Raw, kind)
		return &r
	}
	if n := countLines(content); n > MaxLines {
		r := errorf("Refused to write %s: the result would have %s lines, more than the maximum of 999,999 lines.", p.Raw, groupThousands(n))
		return &r
	}
	return nil
}

// countLines counts lines the way a reader does: a final newline ends the
// last line rather than starting a new one; an empty file has one (empty)
// line, as view shows it.
func countLines(s string) int {
	n := strings.Count(s, "\n") + 1
	if n > 1 && strings.HasSuffix(s, "\n") {
		n--
	}
	return n
}

// isText reports whether data is shown as text: valid UTF-8 without NUL.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

func notTextError(p Path, n int, cmd string) Result {
	if cmd == "view" {
		return errorf("The file %s is not a UTF-8 text file (%s bytes of binary data); the memory tool can only show text files and .jpg, .jpeg or .png images.", p.Raw, groupThousands(n))
	}
	return errorf("The file %s is not a UTF-8 text file, so %s cannot edit it. Delete it or replace it with create.", p.Raw, cmd)
}

func (t *Tool) tooLargeToRead(p Path) Result {
	return errorf("The file %s is larger than the %s-byte limit for reading; it cannot be shown or edited. Delete it or rename it.", p.Raw, groupThousands(int(t.opt.MaxReadSize)))
}

// truncateNote returns the notice appended to a view cut after whole
// lines: lines first..last of total were shown, and view_range [last+1, -1]
// reads on.
func (t *Tool) truncateNote(first, last, total int) string {
	return fmt.Sprintf("[Output truncated: a view shows at most %s characters. Shown: lines %d-%d of %d. To read the rest, call view with \"view_range\": [%d, -1] (or a smaller range).]",
		groupThousands(t.opt.MaxViewChars), first, last, total, last+1)
}

// cutLineNote returns the notice appended to a view cut inside line n (of
// total), which has lineChars characters of which the first shownChars were
// shown. view_range selects whole lines, so it cannot show the rest of that
// line: the notice says so and names the two ways on (split the line with
// str_replace, or make do), then view_range for the lines after n, if any.
func (t *Tool) cutLineNote(n, lineChars, shownChars, total int) string {
	var sb strings.Builder
	limit := groupThousands(t.opt.MaxViewChars)
	if lineChars > t.opt.MaxViewChars {
		fmt.Fprintf(&sb, "[Output truncated: line %d is longer than %s characters (%s) and was cut after character %s.",
			n, limit, groupThousands(lineChars), groupThousands(shownChars))
	} else {
		fmt.Fprintf(&sb, "[Output truncated: line %d (%s characters) does not fit in one view of at most %s characters with its header and was cut after character %s.",
			n, groupThousands(lineChars), limit, groupThousands(shownChars))
	}
	sb.WriteString(" view cannot show the rest of that line, with or without view_range; to read it, first split the line with str_replace (replace a fragment near the cut with itself plus a newline), or make do with the part shown.")
	if n < total {
		fmt.Fprintf(&sb, " To read from line %d on, call view with \"view_range\": [%d, -1].", n+1, n+1)
	}
	sb.WriteString("]")
	return sb.String()
}
