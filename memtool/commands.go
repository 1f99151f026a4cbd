package memtool

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ---- view ----

func (t *Tool) view(ctx context.Context, in *args) Result {
	p, res := in.path("path")
	if res != nil {
		return *res
	}
	var vr []json.RawMessage
	vrRaw, hasRange := in.m["view_range"]
	if hasRange && !isNull(vrRaw) {
		if err := json.Unmarshal(vrRaw, &vr); err != nil || len(vr) != 2 {
			return errorf("Invalid view_range %s: it must be an array of two integers [start_line, end_line], e.g. [1, 50], or [start_line, -1] to read to the end of the file.", compactJSON(vrRaw))
		}
	} else {
		hasRange = false
	}
	unlock, res := t.lock(ctx, false, p.Rel)
	if res != nil {
		return *res
	}
	defer unlock()

	missing := func() Result {
		return errorText("The path " + p.Raw + " does not exist. Please provide a valid path.")
	}
	if p.TrailingSlash {
		// Only a directory may be viewed with a trailing "/": look first
		// rather than read (and touch) a file.
		info, err := t.fs.Stat(ctx, p.Rel)
		switch {
		case errors.Is(err, ErrNotExist), errors.Is(err, ErrNotDir):
			return missing()
		case errors.Is(err, ErrSymlink):
			return symlinkError(p)
		case err != nil:
			return t.internal("view", p, err)
		}
		switch info.Kind {
		case KindDir:
			return t.viewDir(ctx, p)
		case KindSymlink:
			return symlinkError(p)
		case KindFile:
			return errorf("The path %s is a file, not a directory; remove the trailing \"/\" to view it.", p.Raw)
		default:
			return errorf("The path %s is neither a regular file nor a directory; the memory tool cannot show it.", p.Raw)
		}
	}
	// Read directly: a directory is reported by ReadFile as ErrIsDir, so a
	// file view costs one backend call, not a Stat and a ReadFile.
	data, touched, err := t.readTouch(ctx, p.Rel)
	switch {
	case errors.Is(err, ErrNotExist), errors.Is(err, ErrNotDir):
		return missing()
	case errors.Is(err, ErrSymlink):
		return symlinkError(p)
	case errors.Is(err, ErrTooLarge):
		return t.tooLargeToRead(p)
	case errors.Is(err, ErrIsDir):
		return t.viewDir(ctx, p)
	case errors.Is(err, ErrNotRegular):
		return errorf("The path %s is neither a regular file nor a directory; the memory tool cannot show it.", p.Raw)
	case err != nil:
		return t.internal("view", p, err)
	}
	touch := func() {
		if !touched {
			t.touch(ctx, p.Rel)
		}
	}
	if mt, isImage := imageType(p.Rel); isImage {
		if !hasMagic(mt, data) {
			return errorf("The file %s has an image extension but its content is not a valid %s image; it cannot be shown.", p.Raw, strings.TrimPrefix(mt, "image/"))
		}
		touch()
		return Result{Content: []Block{{Type: BlockImage, MediaType: mt, Data: base64.StdEncoding.EncodeToString(data)}}}
	}
	if !isText(data) {
		return notTextError(p, len(data), "view")
	}
	content := string(data)
	if n := countLines(content); n > MaxLines {
		return errorText("File " + p.Raw + " exceeds maximum line limit of 999,999 lines.")
	}
	lines := strings.Split(content, "\n")
	first, last := 1, len(lines)
	if hasRange {
		a, okA := integer(vr[0])
		b, okB := integer(vr[1])
		switch {
		case !okA || !okB:
			return errorf("Invalid view_range %s: it must be an array of two integers [start_line, end_line], e.g. [1, 50], or [start_line, -1] to read to the end of the file.", compactJSON(vrRaw))
		case a < 1:
			return errorf("Invalid view_range [%d, %d]: start_line must be at least 1 (lines are numbered from 1).", a, b)
		case a > len(lines):
			return errorf("Invalid view_range [%d, %d]: start_line %d is beyond the end of %s, which has %d lines.", a, b, a, p.Raw, len(lines))
		case b != -1 && b < a:
			return errorf("Invalid view_range [%d, %d]: end_line must be -1 (end of file) or at least start_line %d.", a, b, a)
		}
		first = a
		if b != -1 && b < last {
			last = b
		}
	}
	touch()
	return textResult(t.numbered("Here's the content of "+p.Raw+" with line numbers:\n", lines[first-1:last], first, len(lines)))
}

// numbered renders lines (the first one numbered first) after header,
// cutting the output at MaxViewChars characters with a notice that says how
// to read on.
func (t *Tool) numbered(header string, lines []string, first, total int) string {
	var sb strings.Builder
	sb.WriteString(header)
	budget := t.opt.MaxViewChars
	used := utf8.RuneCountInString(header)
	for k, line := range lines {
		n := first + k
		var entry strings.Builder
		if k > 0 {
			entry.WriteByte('\n')
		}
		numberLine(&entry, n, line)
		e := entry.String()
		if budget < 0 {
			sb.WriteString(e)
			continue
		}
		c := utf8.RuneCountInString(e)
		if used+c <= budget {
			sb.WriteString(e)
			used += c
			continue
		}
		if k > 0 {
			sb.WriteString("\n" + t.truncateNote(first, n-1, total))
			return sb.String()
		}
		// Not even the first line fits: show as much of it as allowed so
		// that the model always sees something, and say that view cannot
		// show the rest of that line.
		avail := max(budget-used, 0)
		sb.WriteString(truncateRunes(e, avail))
		sb.WriteString("\n")
		lineChars := utf8.RuneCountInString(line)
		sb.WriteString(t.cutLineNote(n, lineChars, max(avail-(c-lineChars), 0), total))
		return sb.String()
	}
	return sb.String()
}

func truncateRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	s := b.String()
	if len(s) > 100 {
		s = truncateUTF8(s, 100) + "..."
	}
	return s
}

func imageType(name string) (string, bool) {
	switch strings.ToLower(path.Ext(name)) {
	case ".png":
		return "image/png", true
	case ".jpg", ".jpeg":
		return "image/jpeg", true
	}
	return "", false
}

func hasMagic(mediaType string, data []byte) bool {
	switch mediaType {
	case "image/png":
		return bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		return bytes.HasPrefix(data, []byte{0xff, 0xd8, 0xff})
	}
	return false
}

func (t *Tool) viewDir(ctx context.Context, p Path) Result {
	var sb strings.Builder
	sb.WriteString("Here're the files and directories up to 2 levels deep in " + p.Raw + ", excluding hidden items and node_modules:\n")
	sb.WriteString(formatSize(DirSize) + "\t" + p.Raw)
	var lines []string
	var walk func(rel, display string, depth int) error
	walk = func(rel, display string, depth int) error {
		entries, err := t.fs.ReadDir(ctx, rel)
		if err != nil {
			return err
		}
		entries = visibleEntries(entries)
		for _, e := range entries {
			childRel := e.Name
			if rel != "" {
				childRel = rel + "/" + e.Name
			}
			childDisplay := display + "/" + e.Name
			if e.Kind == KindDir {
				lines = append(lines, formatSize(DirSize)+"\t"+childDisplay+"/")
				if depth < 2 {
					_ = walk(childRel, childDisplay, depth+1) // a vanished subdirectory is simply not listed
				}
				continue
			}
			lines = append(lines, formatSize(e.Size)+"\t"+childDisplay)
		}
		return nil
	}
	if err := walk(p.Rel, p.Display(), 1); err != nil {
		if errors.Is(err, ErrNotExist) {
			return errorText("The path " + p.Raw + " does not exist. Please provide a valid path.")
		}
		return t.internal("view", p, err)
	}
	used := utf8.RuneCountInString(sb.String())
	for i, l := range lines {
		c := utf8.RuneCountInString(l) + 1
		if t.opt.MaxViewChars >= 0 && used+c > t.opt.MaxViewChars {
			sb.WriteString("\n[Listing truncated: a view shows at most " + groupThousands(t.opt.MaxViewChars) + " characters; " +
				strconv.Itoa(i) + " of " + strconv.Itoa(len(lines)) + " entries are shown. View a subdirectory to see the rest.]")
			break
		}
		sb.WriteByte('\n')
		sb.WriteString(l)
		used += c
	}
	return textResult(sb.String())
}

// visibleEntries drops hidden names, node_modules, names that no valid path
// can address, and everything that is neither a file nor a directory; it
// sorts the rest in UTF-16 code-unit order.
func visibleEntries(entries []Info) []Info {
	out := entries[:0:0]
	for _, e := range entries {
		if strings.HasPrefix(e.Name, ".") || e.Name == "node_modules" || !validName(e.Name) {
			continue
		}
		if e.Kind != KindFile && e.Kind != KindDir {
			continue
		}
		out = append(out, e)
	}
	sortInfos(out)
	return out
}

// ---- create ----

func (t *Tool) create(ctx context.Context, in *args) Result {
	p, res := in.filePath("path")
	if res != nil {
		return *res
	}
	text, res := in.requiredStr("file_text", "give the full content of the file (it may be empty)")
	if res != nil {
		return *res
	}
	if p.IsRoot() {
		return errorText("Error: File " + p.Raw + " already exists")
	}
	if r := t.checkWrite(p, text, text); r != nil {
		return *r
	}
	unlock, res := t.lock(ctx, true, p.Rel)
	if res != nil {
		return *res
	}
	defer unlock()

	var ifMatch Version
	overwritten := false
	if t.opt.Overwrite {
		info, err := t.fs.Stat(ctx, p.Rel)
		switch {
		case err == nil && info.Kind == KindFile:
			_, v, err := t.fs.ReadFile(ctx, p.Rel, -1)
			if err != nil {
				return t.createError(p, err)
			}
			ifMatch, overwritten = v, true
		case err == nil && info.Kind == KindDir:
			return errorf("Cannot create %s: it is an existing directory, which create cannot overwrite.", p.Raw)
		case err == nil:
			return errorText("Error: File " + p.Raw + " already exists")
		case !errors.Is(err, ErrNotExist):
			return t.createError(p, err)
		}
	}
	if err := t.writeTouch(ctx, p.Rel, []byte(text), ifMatch); err != nil {
		return t.createError(p, err)
	}
	if overwritten {
		return textResult("File overwritten successfully at: " + p.Raw)
	}
	return textResult("File created successfully at: " + p.Raw)
}

func (t *Tool) createError(p Path, err error) Result {
	switch {
	case errors.Is(err, ErrExist), errors.Is(err, ErrIsDir):
		return errorText("Error: File " + p.Raw + " already exists")
	case errors.Is(err, ErrNotDir):
		return errorf("Cannot create %s: a parent of this path is a file, not a directory. Choose another path.", p.Raw)
	case errors.Is(err, ErrSymlink):
		return symlinkError(p)
	case errors.Is(err, ErrConflict):
		return conflictError(p)
	}
	return t.internal("create", p, err)
}

func conflictError(p Path) Result {
	return errorf("%s was changed by another writer while this command ran; nothing was written. View the file again and retry.", p.Raw)
}

// ---- str_replace ----

// maxListedLines caps the line numbers listed in the "Multiple occurrences"
// error.
const maxListedLines = 100

func (t *Tool) strReplace(ctx context.Context, in *args) Result {
	p, res := in.filePath("path")
	if res != nil {
		return *res
	}
	oldStr, res := in.requiredStr("old_str", "give the exact text to replace")
	if res != nil {
		return *res
	}
	if oldStr == "" {
		return errorf("Invalid parameter \"old_str\" for str_replace: it must not be empty. Give the exact text to replace (to add text, use insert).")
	}
	newStr, _, res := in.str("new_str", "")
	if res != nil {
		return *res
	}
	missing := func() Result {
		return errorText("Error: The path " + p.Raw + " does not exist. Please provide a valid path.")
	}
	var content, updated string
	var pos int
	if r := t.editQueued(ctx, p, &pendingEdit{cmd: "str_replace", missing: missing, apply: func(c string) (string, *Result) {
		// Every occurrence start, overlapping ones included: the edit must
		// be unambiguous.
		var starts []int
		for i := 0; i <= len(c)-len(oldStr); {
			j := strings.Index(c[i:], oldStr)
			if j < 0 {
				break
			}
			starts = append(starts, i+j)
			_, size := utf8.DecodeRuneInString(c[i+j:])
			i += j + max(size, 1)
		}
		switch len(starts) {
		case 0:
			r := errorText("No replacement was performed, old_str `" + oldStr + "` did not appear verbatim in " + p.Raw + ".")
			return "", &r
		case 1:
		default:
			var nums []string
			line, from := 1, 0
			for k, s := range starts {
				if k == maxListedLines {
					nums = append(nums, "... ("+strconv.Itoa(len(starts)-k)+" more)")
					break
				}
				line += strings.Count(c[from:s], "\n")
				from = s
				nums = append(nums, strconv.Itoa(line))
			}
			r := errorText("No replacement was performed. Multiple occurrences of old_str `" + oldStr + "` in lines: " + strings.Join(nums, ", ") + ". Please ensure it is unique")
			return "", &r
		}
		content, pos = c, starts[0]
		updated = c[:pos] + newStr + c[pos+len(oldStr):]
		return updated, t.checkWrite(p, updated, newStr)
	}}); r != nil {
		return *r
	}

	line := 1 + strings.Count(content[:pos], "\n")
	lines := strings.Split(updated, "\n")
	from := max(1, line-2)
	to := min(len(lines), line+2+strings.Count(newStr, "\n"))
	return textResult(t.numbered("The memory file has been edited. Here is the snippet showing the change (with line numbers):\n", lines[from-1:to], from, len(lines)))
}

// backoff waits a random time below attempt × 2 ms, so that two writers that
// keep colliding on one file drift apart. It returns false if ctx ended.
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

// readEditError maps a failed read of the file an edit command works on to
// that command's message; expected is false for a storage failure (the
// generic message or the backend's refusal) rather than a state of the file.
func (t *Tool) readEditError(p Path, cmd string, err error, missing func() Result) (r Result, expected bool) {
	switch {
	case errors.Is(err, ErrNotExist), errors.Is(err, ErrNotDir), errors.Is(err, ErrIsDir), errors.Is(err, ErrNotRegular):
		return missing(), true
	case errors.Is(err, ErrSymlink):
		return symlinkError(p), true
	case errors.Is(err, ErrTooLarge):
		return t.tooLargeToRead(p), true
	}
	return t.internal(cmd, p, err), false
}

func (t *Tool) editWriteError(p Path, cmd string, err error) Result {
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrNotExist):
		return conflictError(p)
	case errors.Is(err, ErrSymlink):
		return symlinkError(p)
	}
	return t.internal(cmd, p, err)
}

// ---- insert ----

func (t *Tool) insert(ctx context.Context, in *args) Result {
	p, res := in.filePath("path")
	if res != nil {
		return *res
	}
	rawLine, ok := in.m["insert_line"]
	if !ok || isNull(rawLine) {
		return errorf("Missing required parameter \"insert_line\" for insert: give the line number after which to insert (0 inserts at the beginning of the file).")
	}
	k, ok := integer(rawLine)
	if !ok {
		return errorf("Invalid `insert_line` parameter: %s. It must be an integer: the line number after which to insert (0 inserts at the beginning of the file).", compactJSON(rawLine))
	}
	text, res := in.requiredStr("insert_text", "give the text to insert")
	if res != nil {
		return *res
	}
	missing := func() Result { return errorText("Error: The path " + p.Raw + " does not exist") }
	if r := t.editQueued(ctx, p, &pendingEdit{cmd: "insert", missing: missing, apply: func(content string) (string, *Result) {
		updated, n, ok := InsertText(content, k, text)
		if !ok {
			r := errorText("Error: Invalid `insert_line` parameter: " + strconv.Itoa(k) + ". It should be within the range of lines of the file: [0, " + strconv.Itoa(n) + "]")
			return "", &r
		}
		return updated, t.checkWrite(p, updated, text)
	}}); r != nil {
		return *r
	}
	return textResult("The file " + p.Raw + " has been edited.")
}

// InsertText implements insert with the reference semantics: content is
// split on "\n" into n elements, line must be in [0, n], one trailing "\n"
// is removed from text, text becomes element number line (0-based) and the
// elements are joined with "\n". Bytes of content are otherwise unchanged
// ("\r" included). It returns the new content, n, and whether line was in
// range.
func InsertText(content string, line int, text string) (string, int, bool) {
	n := strings.Count(content, "\n") + 1
	if line < 0 || line > n {
		return content, n, false
	}
	text = strings.TrimSuffix(text, "\n")
	switch line {
	case 0:
		return text + "\n" + content, n, true
	case n:
		return content + "\n" + text, n, true
	}
	off := 0
	for range line {
		off += strings.IndexByte(content[off:], '\n') + 1
	}
	return content[:off] + text + "\n" + content[off:], n, true
}

// ---- delete ----

func (t *Tool) delete(ctx context.Context, in *args) Result {
	p, res := in.path("path")
	if res != nil {
		return *res
	}
	if p.IsRoot() {
		return errorf("Cannot delete the %s directory itself. Delete the files and directories inside it instead.", RootPath)
	}
	unlock, res := t.lock(ctx, true, p.Rel)
	if res != nil {
		return *res
	}
	defer unlock()
	missing := func() Result { return errorText("Error: The path " + p.Raw + " does not exist") }
	info, err := t.fs.Stat(ctx, p.Rel)
	switch {
	case errors.Is(err, ErrNotExist), errors.Is(err, ErrNotDir):
		return missing()
	case errors.Is(err, ErrSymlink):
		return symlinkError(p)
	case err != nil:
		return t.internal("delete", p, err)
	}
	if p.TrailingSlash && info.Kind != KindDir {
		return errorf("The path %s is not a directory; remove the trailing \"/\" to delete it.", p.Raw)
	}
	if err := t.fs.Remove(ctx, p.Rel); err != nil {
		switch {
		case errors.Is(err, ErrNotExist), errors.Is(err, ErrNotDir):
			return missing()
		case errors.Is(err, ErrSymlink):
			return symlinkError(p)
		}
		return t.internal("delete", p, err)
	}
	return textResult("Successfully deleted " + p.Raw)
}

// ---- rename ----

func (t *Tool) rename(ctx context.Context, in *args) Result {
	op, res := in.path("old_path")
	if res != nil {
		return *res
	}
	np, res := in.path("new_path")
	if res != nil {
		return *res
	}
	if op.IsRoot() {
		return errorf("Cannot rename the %s directory itself. Rename the files and directories inside it instead.", RootPath)
	}
	for _, p := range []Path{op, np} {
		if p.TrailingSlash {
			return errorf("Invalid path %s: rename paths cannot end with \"/\".", p.Raw)
		}
	}
	destExists := func() Result { return errorText("Error: The destination " + np.Raw + " already exists") }
	if np.IsRoot() || np.Rel == op.Rel {
		return destExists()
	}
	if strings.HasPrefix(np.Rel, op.Rel+"/") {
		return errorf("Cannot rename %s to %s: the destination is inside the source. Choose a destination outside %s.", op.Raw, np.Raw, op.Raw)
	}
	unlock, res := t.lock(ctx, true, op.Rel, np.Rel)
	if res != nil {
		return *res
	}
	defer unlock()

	missing := func() Result { return errorText("Error: The path " + op.Raw + " does not exist") }
	parentIsFile := func() Result {
		return errorf("Cannot rename %s to %s: a parent of the destination is a file, not a directory. Choose another destination.", op.Raw, np.Raw)
	}
	_, err := t.fs.Stat(ctx, np.Rel)
	switch {
	case err == nil:
		return destExists()
	case errors.Is(err, ErrNotDir):
		return parentIsFile()
	case errors.Is(err, ErrSymlink):
		return symlinkError(np)
	case !errors.Is(err, ErrNotExist):
		return t.internal("rename", np, err)
	}
	_, err = t.fs.Stat(ctx, op.Rel)
	switch {
	case errors.Is(err, ErrNotExist), errors.Is(err, ErrNotDir):
		return missing()
	case errors.Is(err, ErrSymlink):
		return symlinkError(op)
	case err != nil:
		return t.internal("rename", op, err)
	}
	if err := t.fs.Rename(ctx, op.Rel, np.Rel); err != nil {
		switch {
		case errors.Is(err, ErrExist):
			return destExists()
		case errors.Is(err, ErrNotExist):
			return missing()
		case errors.Is(err, ErrNotDir):
			return parentIsFile()
		case errors.Is(err, ErrSymlink):
			return symlinkError(op)
		}
		return t.internal("rename", op, err)
	}
	return textResult("Successfully renamed " + op.Raw + " to " + np.Raw)
}
