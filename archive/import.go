package archive

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/atomicfile"
)

// TagKey is the store metadata key an import sets, to the archive's
// ExportID, on a store it creates, and removes when it finishes: a re-run
// after a kill between creating the store and recording it in the journal
// finds the store by it. It is left out when the archive's metadata is
// already at the metadata limit.
const TagKey = "trove_import"

// ImportOptions tune Import. The zero value creates a new store and keeps no
// journal.
type ImportOptions struct {
	// StoreID, when set, fills that existing store instead of creating
	// one; its name, description and metadata are left as they are.
	StoreID string
	// JournalPath, when set, is the journal file recording which store an
	// import into Target created (JournalFor gives the usual place).
	JournalPath string
	// Target names the server or database imported into (a URL or a data
	// directory), so one archive imported into two places keeps two
	// journal entries.
	Target string
	// Progress, when not nil, is called after each memory.
	Progress func(Progress)
	// Name, when set, is the name of the store the import creates (else
	// the archive's). Unless AllowDuplicateName, an import that would
	// create a store whose name a live store of the workspace already has
	// is refused before anything is written (ECONFLICT,
	// trove.CheckStoreNameFree).
	Name               string
	AllowDuplicateName bool
	// Limits are the target's limits the archive is checked against before
	// anything is written (zero fields: trove.DefaultLimits). A target that
	// enforces tighter ones refuses a write, and the import is undone.
	Limits trove.Limits
}

// Conflict is an archive memory the target already holds differently: it
// is reported and never overwritten.
type Conflict struct {
	Path          string `json:"path"`
	ArchiveSHA256 string `json:"archive_sha256"`
	// StoreSHA256 is the target's hash at Path, or "" when the path
	// collides with another memory's path (ConflictingPath).
	StoreSHA256     string `json:"store_sha256,omitempty"`
	ConflictingPath string `json:"conflicting_path,omitempty"`
}

// ImportReport is what Import did.
type ImportReport struct {
	Store   *trove.Store `json:"-"`
	StoreID string       `json:"store_id"`
	Created bool         `json:"created"` // the store was created by this import or an earlier, interrupted run of it
	Resumed bool         `json:"resumed"` // the journal or the tag named the store
	// Written are the paths this run created; Present the paths the store
	// already held with the archive's exact content (an earlier run, or
	// the same data).
	Written   []string   `json:"written"`
	Present   []string   `json:"present"`
	Conflicts []Conflict `json:"conflicts"`
	// HistoryVersions is how many versions the manifest records.
	HistoryVersions int `json:"history_versions"`
	// Manifest is the archive's manifest without its versions (counted in
	// HistoryVersions; ReadManifest returns them): the history stays in
	// the archive, the target's own versions start anew with this import.
	Manifest *Manifest `json:"-"`
	// RolledBack: the import failed after it began writing and what it
	// wrote was undone (the store it created deleted, or the memories it
	// created in an existing store deleted).
	RolledBack bool `json:"rolled_back,omitempty"`
	// Resumable: the import failed after it began writing because the
	// target could not be reached or the run was cancelled; running it
	// again completes it.
	Resumable bool `json:"resumable,omitempty"`

	ownStore bool     // the store was created by this import (this run or an earlier one)
	written  []string // IDs of the memories this run created, in order
}

// JournalFor returns the journal path Import uses for archivePath: the
// archive's name with ".import.json" appended, in the same directory.
func JournalFor(archivePath string) string {
	return archivePath + ".import.json"
}

// journal is the import journal: per target, the store the archive is
// imported into.
type journal struct {
	ExportID string                   `json:"export_id"`
	Targets  map[string]*journalEntry `json:"targets"`
}

type journalEntry struct {
	StoreID string `json:"store_id"`
	Done    bool   `json:"done"`
}

// MaxManifestBytes bounds manifest.json: far above the manifest of a store
// at every limit (10,000 memories, 250,000 versions), far below what would
// exhaust a machine's time.
const MaxManifestBytes = 1 << 30

// maxJSONValue bounds one JSON value of the manifest held at once (the
// store object, one memory, one version, any string): a real one is a few
// kilobytes, so a 96 MiB description is refused after 1 MiB, not held.
const maxJSONValue = 1 << 20

// ReadManifest reads the manifest of the archive at path and checks the
// archive whole, as Import does before writing (see Check), against the
// documented limits. Unlike Check it returns the versions too, so its
// memory grows with the manifest's history (up to MaxManifestBytes).
func ReadManifest(path string) (*Manifest, error) {
	c, err := check(path, trove.DefaultLimits(), true)
	if err != nil {
		return nil, err
	}
	return c.m, nil
}

// Check reads the archive at path once, streaming, and checks all of it
// against lim (zero fields: trove.DefaultLimits): a supported format, the
// manifest's store fields within the limits, at most MaxMemoriesPerStore
// memories with valid distinct paths (bytes and segments), exactly one
// file per memory whose size, SHA-256 and UTF-8 validity are checked from
// its bytes (the manifest's sizes are never trusted: a file larger than
// MaxContentBytes is refused by its tar header before it is read), and no
// file the manifest does not name. Its memory is bounded by lim, not by the
// archive: one file at a time, manifest.json at most MaxManifestBytes
// decoded as a stream with each value at most 1 MiB, the versions counted
// and not held (the returned Manifest has Versions nil; HistoryVersions
// in the report counts them).
func Check(path string, lim trove.Limits) (*Manifest, int, error) {
	c, err := check(path, lim, false)
	if err != nil {
		return nil, 0, err
	}
	return c.m, c.versions, nil
}

// entrySum is what the checking pass learned of one file.
type entrySum struct {
	sha  string
	size int
}

// checked is a checked archive.
type checked struct {
	m        *Manifest
	versions int
	sums     map[string]entrySum
}

func fillLimits(lim trove.Limits) trove.Limits {
	d := trove.DefaultLimits()
	for _, f := range []struct{ v, def *int }{
		{&lim.MaxContentBytes, &d.MaxContentBytes}, {&lim.MaxMemoriesPerStore, &d.MaxMemoriesPerStore},
		{&lim.MaxPathBytes, &d.MaxPathBytes}, {&lim.MaxPathSegments, &d.MaxPathSegments},
		{&lim.MaxNameChars, &d.MaxNameChars}, {&lim.MaxDescriptionChars, &d.MaxDescriptionChars},
		{&lim.MaxMetadataPairs, &d.MaxMetadataPairs}, {&lim.MaxMetadataKeyChars, &d.MaxMetadataKeyChars},
		{&lim.MaxMetadataValChars, &d.MaxMetadataValChars},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return lim
}

func check(path string, lim trove.Limits, keepVersions bool) (*checked, error) {
	lim = fillLimits(lim)
	c := &checked{sums: map[string]entrySum{}}
	var m *Manifest
	buf := make([]byte, 0, 32<<10)
	maxName := len(MemoriesDir) + lim.MaxPathBytes
	err := eachEntry(path, func(h *tar.Header, r io.Reader) error {
		if h.Name == ManifestName {
			if m != nil {
				return fmt.Errorf("%s: two %s entries", path, ManifestName)
			}
			if h.Size > MaxManifestBytes {
				return fmt.Errorf("%s: %s is %d bytes; the limit is %d bytes", path, ManifestName, h.Size, int64(MaxManifestBytes))
			}
			var err error
			m, c.versions, err = decodeManifest(r, keepVersions, lim)
			if err != nil {
				return fmt.Errorf("%s: %s: %v", path, ManifestName, err)
			}
			return nil
		}
		if len(h.Name) > maxName {
			return fmt.Errorf("%s: entry %.80q… is %d bytes long: no memory path is longer than %d bytes", path, h.Name, len(h.Name), lim.MaxPathBytes)
		}
		if _, dup := c.sums[h.Name]; dup {
			return fmt.Errorf("%s: entry %q appears twice", path, h.Name)
		}
		if len(c.sums) >= lim.MaxMemoriesPerStore {
			return fmt.Errorf("%s: more than %d memory files: a store holds at most %d memories", path, lim.MaxMemoriesPerStore, lim.MaxMemoriesPerStore)
		}
		if h.Size > int64(lim.MaxContentBytes) {
			return fmt.Errorf("%s: %q is %d bytes; the limit is %d bytes per memory", path, h.Name, h.Size, lim.MaxContentBytes)
		}
		var err error
		buf, err = readEntry(buf, r, lim.MaxContentBytes)
		if err != nil {
			return fmt.Errorf("%s: reading %q: %v", path, h.Name, err)
		}
		if err := trove.CheckContentUTF8Bytes(buf); err != nil {
			return fmt.Errorf("%s: %q: %s (import never alters bytes)", path, h.Name, trove.ErrorMessage(err))
		}
		sum := sha256.Sum256(buf)
		c.sums[h.Name] = entrySum{sha: hex.EncodeToString(sum[:]), size: len(buf)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%s is not a trove archive: it has no %s", path, ManifestName)
	}
	if err := checkManifest(m, lim); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	seen := make(map[string]bool, len(m.Memories))
	for _, mem := range m.Memories {
		if mem.File != FileName(mem.Path) || seen[mem.File] {
			return nil, fmt.Errorf("%s: memory %q has file %q, want %q once", path, mem.Path, mem.File, FileName(mem.Path))
		}
		seen[mem.File] = true
		sum, ok := c.sums[mem.File]
		if !ok {
			return nil, fmt.Errorf("%s: memory %q has no file %q in the archive", path, mem.Path, mem.File)
		}
		if sum.sha != mem.ContentSHA256 {
			return nil, fmt.Errorf("%s: %q does not match its content_sha256 in the manifest: the archive is damaged", path, mem.File)
		}
		if sum.size != mem.SizeBytes {
			return nil, fmt.Errorf("%s: %q is %d bytes, the manifest says %d: the archive is damaged", path, mem.File, sum.size, mem.SizeBytes)
		}
	}
	for name := range c.sums {
		if !seen[name] {
			return nil, fmt.Errorf("%s: entry %q is not in the manifest", path, name)
		}
	}
	c.m = m
	return c, nil
}

// checkManifest checks the manifest's own fields against lim.
func checkManifest(m *Manifest, lim trove.Limits) error {
	if m.Format != Format || m.FormatVersion != FormatVersion {
		return fmt.Errorf("unsupported archive format %q version %d (this trove reads %q version %d)", m.Format, m.FormatVersion, Format, FormatVersion)
	}
	if m.ExportID == "" || m.Store.Name == "" {
		return fmt.Errorf("the manifest has no export_id or store name")
	}
	for what, v := range map[string]string{"export_id": m.ExportID, "store name": m.Store.Name, "store description": m.Store.Description} {
		if !utf8.ValidString(v) {
			return fmt.Errorf("the %s is not valid UTF-8", what)
		}
	}
	if n := utf8.RuneCountInString(m.Store.Name); n > lim.MaxNameChars {
		return fmt.Errorf("the store name is %d characters; the limit is %d", n, lim.MaxNameChars)
	}
	if n := utf8.RuneCountInString(m.Store.Description); n > lim.MaxDescriptionChars {
		return fmt.Errorf("the store description is %d characters; the limit is %d", n, lim.MaxDescriptionChars)
	}
	if len(m.Store.Metadata) > lim.MaxMetadataPairs {
		return fmt.Errorf("the store has %d metadata pairs; the limit is %d", len(m.Store.Metadata), lim.MaxMetadataPairs)
	}
	for k, v := range m.Store.Metadata {
		if utf8.RuneCountInString(k) > lim.MaxMetadataKeyChars || utf8.RuneCountInString(v) > lim.MaxMetadataValChars || !utf8.ValidString(k) || !utf8.ValidString(v) {
			return fmt.Errorf("store metadata %.80q is over the limits (keys %d, values %d characters) or not UTF-8", k, lim.MaxMetadataKeyChars, lim.MaxMetadataValChars)
		}
	}
	if len(m.Memories) > lim.MaxMemoriesPerStore {
		return fmt.Errorf("%d memories: a store holds at most %d", len(m.Memories), lim.MaxMemoriesPerStore)
	}
	paths := make(map[string]bool, len(m.Memories))
	for _, mem := range m.Memories {
		if err := trove.ValidatePath(mem.Path, lim.MaxPathBytes, lim.MaxPathSegments); err != nil {
			return fmt.Errorf("memory path %.120q: %v", mem.Path, trove.ErrorMessage(err))
		}
		if paths[mem.Path] {
			return fmt.Errorf("memory path %q appears twice", mem.Path)
		}
		paths[mem.Path] = true
	}
	return nil
}

// readEntry reads r whole into buf (reused) when it holds at most max
// bytes, else fails without reading more than max+1.
func readEntry(buf []byte, r io.Reader, max int) ([]byte, error) {
	buf = buf[:0]
	lr := io.LimitReader(r, int64(max)+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf, fmt.Errorf("larger than the limit of %d bytes per memory", max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// errValueTooLarge: one JSON value of the manifest is over maxJSONValue.
var errValueTooLarge = fmt.Errorf("a value is larger than %d bytes: not a manifest trove wrote", maxJSONValue)

// guard is the manifest's reader: it fails once the decoder holds more
// than maxJSONValue bytes it has not consumed (one value too large), and
// after MaxManifestBytes in all.
type guard struct {
	r   io.Reader
	n   int64
	dec *json.Decoder
}

func (g *guard) Read(p []byte) (int, error) {
	if g.n-g.dec.InputOffset() > maxJSONValue {
		return 0, errValueTooLarge
	}
	if g.n >= MaxManifestBytes {
		return 0, fmt.Errorf("larger than %d bytes", int64(MaxManifestBytes))
	}
	if len(p) > 64<<10 {
		p = p[:64<<10]
	}
	n, err := g.r.Read(p)
	g.n += int64(n)
	return n, err
}

// decodeManifest decodes manifest.json as a stream: the top-level object's
// members one by one, the memories and versions element by element, each
// value bounded by the guard. Versions are counted, and kept only with
// keepVersions. More memories than lim allows is refused as soon as seen.
func decodeManifest(r io.Reader, keepVersions bool, lim trove.Limits) (*Manifest, int, error) {
	g := &guard{r: r}
	dec := json.NewDecoder(g)
	g.dec = dec
	m := &Manifest{}
	versions := 0
	if err := expectDelim(dec, '{'); err != nil {
		return nil, 0, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, 0, err
		}
		key, _ := tok.(string)
		switch key {
		case "memories":
			if err := eachElement(dec, func() error {
				if len(m.Memories) >= lim.MaxMemoriesPerStore {
					return fmt.Errorf("more than %d memories: a store holds at most %d", lim.MaxMemoriesPerStore, lim.MaxMemoriesPerStore)
				}
				var mem Memory
				if err := dec.Decode(&mem); err != nil {
					return err
				}
				m.Memories = append(m.Memories, mem)
				return nil
			}); err != nil {
				return nil, 0, err
			}
		case "versions":
			if err := eachElement(dec, func() error {
				var v Version
				if err := dec.Decode(&v); err != nil {
					return err
				}
				versions++
				if keepVersions {
					m.Versions = append(m.Versions, v)
				}
				return nil
			}); err != nil {
				return nil, 0, err
			}
		case "format":
			err = dec.Decode(&m.Format)
		case "format_version":
			err = dec.Decode(&m.FormatVersion)
		case "export_id":
			err = dec.Decode(&m.ExportID)
		case "exported_at":
			err = dec.Decode(&m.ExportedAt)
		case "source":
			err = dec.Decode(&m.Source)
		case "store":
			err = dec.Decode(&m.Store)
		default:
			var skip json.RawMessage
			err = dec.Decode(&skip)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, 0, err
	}
	return m, versions, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("not valid JSON: want %q, got %v", want, tok)
	}
	return nil
}

// eachElement calls fn for each element of the array dec is at (null is
// an empty array), fn decoding the element.
func eachElement(dec *json.Decoder, fn func() error) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return fmt.Errorf("want an array, got %v", tok)
	}
	for dec.More() {
		if err := fn(); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// eachEntry calls fn with each regular entry of the gzip tar at path.
func eachEntry(path string, fn func(*tar.Header, io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s is not a gzip-compressed trove archive: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: reading the archive: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := fn(h, tr); err != nil {
			return err
		}
	}
}

// Import copies the archive at path into a store of svc: a new store with
// the archive's name, description and metadata (or opts.StoreID). Each
// memory is created at its path unless the store already holds that path:
// with the same content it is counted Present, otherwise it is reported as
// a Conflict and left as it is.
//
// Import is all or nothing. The whole archive is checked first (Check,
// against opts.Limits), and so is the target's room (its memories plus the
// new ones at most MaxMemoriesPerStore), before anything is written; the
// archive is then read again and each file written after its hash is
// checked once more. When the target refuses a write (a limit the target
// enforces beyond opts.Limits, a file changed since the check, any error
// but an unavailable target), what this run wrote is undone: the memories
// it created are deleted, and the store too when this run created it
// (ImportReport.RolledBack). When the target cannot be reached or the
// run is cancelled, nothing is undone: the run is resumable (re-run, it
// finds the store it created through the journal, else TagKey, skips what
// is already there and ends with each memory once; ImportReport.Resumable).
//
// The target's versions start anew (attributed to the importing
// credential); the exported history stays in the archive's manifest.
func Import(ctx context.Context, svc trove.Services, path string, opts ImportOptions) (*ImportReport, error) {
	lim := fillLimits(opts.Limits)
	c, err := check(path, lim, false)
	if err != nil {
		return nil, err
	}
	m := c.m
	rep := &ImportReport{Manifest: m, HistoryVersions: c.versions, Written: []string{}, Present: []string{}, Conflicts: []Conflict{}}
	j := &journal{ExportID: m.ExportID, Targets: map[string]*journalEntry{}}
	if opts.JournalPath != "" {
		if j, err = readJournal(opts.JournalPath, m.ExportID); err != nil {
			return nil, err
		}
	}
	entry := j.Targets[opts.Target]
	save := func() error {
		if opts.JournalPath == "" {
			return nil
		}
		if entry == nil {
			delete(j.Targets, opts.Target)
		} else {
			j.Targets[opts.Target] = entry
		}
		return writeJournal(opts.JournalPath, j)
	}

	st, err := findTarget(ctx, svc, m, opts, entry, rep)
	if err != nil {
		return nil, err
	}
	have := map[string]stored{}
	if st != nil {
		if have, err = listPaths(ctx, svc, st.ID); err != nil {
			return nil, err
		}
	}
	adding := 0
	for _, mem := range m.Memories {
		if _, ok := have[mem.Path]; !ok {
			adding++
		}
	}
	if n := len(have) + adding; n > lim.MaxMemoriesPerStore {
		where := "a new store"
		if st != nil {
			where = fmt.Sprintf("store %s, which holds %d memories,", st.ID, len(have))
		}
		return nil, trove.Errorf(trove.EINVALID, "importing %d new memories into %s would exceed the limit of %d memories per store: nothing was written", adding, where, lim.MaxMemoriesPerStore)
	}
	if st == nil {
		name := m.Store.Name
		if opts.Name != "" {
			name = opts.Name
		}
		if !opts.AllowDuplicateName {
			if err := trove.CheckStoreNameFree(ctx, svc, name); err != nil {
				return nil, err
			}
		}
		if st, err = createTarget(ctx, svc, m, name); err != nil {
			return nil, err
		}
		rep.Created = true
	}
	// The store is this import's (created by this run or an earlier,
	// interrupted one): undoing the import deletes it.
	rep.ownStore = rep.Created && opts.StoreID == ""
	rep.Store, rep.StoreID = st, st.ID
	if entry == nil || entry.StoreID != st.ID {
		entry = &journalEntry{StoreID: st.ID}
	}
	entry.Done = false
	if err := save(); err != nil {
		return rep, rep.fail(ctx, svc, fmt.Errorf("writing the import journal: %w", err), func() { entry = nil; _ = save() })
	}

	byFile := make(map[string]*Memory, len(m.Memories))
	for i := range m.Memories {
		byFile[m.Memories[i].File] = &m.Memories[i]
	}
	done := 0
	progress := opts.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	buf := make([]byte, 0, 32<<10)
	err = eachEntry(path, func(h *tar.Header, r io.Reader) error {
		if h.Name == ManifestName {
			return nil
		}
		mem := byFile[h.Name]
		if mem == nil {
			return fmt.Errorf("%s: entry %q is not in the manifest: the archive changed since it was checked", path, h.Name)
		}
		var err error
		if buf, err = readEntry(buf, r, lim.MaxContentBytes); err != nil {
			return fmt.Errorf("%s: reading %q: %v", path, h.Name, err)
		}
		sum := sha256.Sum256(buf)
		if hex.EncodeToString(sum[:]) != mem.ContentSHA256 {
			return fmt.Errorf("%s: %q does not match its content_sha256 in the manifest: the archive changed since it was checked", path, h.Name)
		}
		if err := importMemory(ctx, svc, st.ID, mem, string(buf), have, rep); err != nil {
			return err
		}
		done++
		progress(Progress{Phase: "import", Done: done, Total: len(m.Memories), Path: mem.Path})
		return nil
	})
	if err == nil && done != len(m.Memories) {
		err = fmt.Errorf("%s: %d memories of the manifest have no file in the archive: the archive changed since it was checked", path, len(m.Memories)-done)
	}
	if err != nil {
		return rep, rep.fail(ctx, svc, err, func() { entry = nil; _ = save() })
	}
	if st.Metadata[TagKey] == m.ExportID && m.Store.Metadata[TagKey] != m.ExportID && rep.Created {
		st, err = svc.UpdateStore(ctx, st.ID, trove.UpdateStoreParams{Metadata: map[string]*string{TagKey: nil}})
		if err != nil {
			rep.Resumable = true
			return rep, fmt.Errorf("removing the import tag from the store: %w", err)
		}
		rep.Store = st
	}
	entry.Done = true
	if err := save(); err != nil {
		return rep, fmt.Errorf("writing the import journal: %w", err)
	}
	return rep, nil
}

// resumable reports whether err leaves a run that a re-run completes: the
// target unreachable or the run cancelled. Any other error is a refusal a
// re-run would meet again.
func resumable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var te *trove.Error
	if errors.As(err, &te) {
		return te.Code == trove.EUNAVAILABLE
	}
	return false
}

// fail ends a run that failed after it began writing: a resumable failure
// is left for a re-run (Resumable); any other is rolled back: the store
// this import created is deleted (else the memories this run created in
// the existing store), and
// forget (which drops the journal entry) is called. A rollback that fails
// is said in the error, with what is left and how to remove it.
func (rep *ImportReport) fail(ctx context.Context, svc trove.Services, err error, forget func()) error {
	if resumable(ctx, err) {
		rep.Resumable = true
		return err
	}
	var rerr error
	if rep.ownStore {
		rerr = svc.DeleteStore(ctx, rep.StoreID)
	} else {
		for i := len(rep.written) - 1; i >= 0 && rerr == nil; i-- {
			rerr = svc.DeleteMemory(ctx, rep.StoreID, rep.written[i], "")
			if trove.ErrorCode(rerr) == trove.ENOTFOUND {
				rerr = nil
			}
		}
	}
	if rerr != nil {
		what := fmt.Sprintf("the %d memories it wrote are still in store %s", len(rep.written), rep.StoreID)
		if rep.ownStore {
			what = fmt.Sprintf("the store %s it created is still there: delete it with trove stores delete %s", rep.StoreID, rep.StoreID)
		}
		return fmt.Errorf("%w; undoing the import failed too (%v): %s", err, rerr, what)
	}
	rep.RolledBack = true
	if rep.ownStore {
		forget()
	}
	rep.Written = []string{}
	return fmt.Errorf("%w; nothing was imported (what this run wrote was undone)", err)
}

// findTarget returns the store to import into: opts.StoreID, the one the
// journal or the tag names, or nil when a new one is to be created.
func findTarget(ctx context.Context, svc trove.Services, m *Manifest, opts ImportOptions, entry *journalEntry, rep *ImportReport) (*trove.Store, error) {
	if opts.StoreID != "" {
		st, err := svc.GetStore(ctx, opts.StoreID)
		if err != nil {
			return nil, err
		}
		if st.ArchivedAt != nil {
			return nil, trove.Errorf(trove.EINVALID, "store %s (%q) is archived: nothing can be imported into it", st.ID, st.Name)
		}
		return st, nil
	}
	if entry != nil && entry.StoreID != "" {
		st, err := svc.GetStore(ctx, entry.StoreID)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil, trove.Errorf(trove.EINVALID, "the store %s this archive was imported into is gone; remove the journal %s to import it anew", entry.StoreID, opts.JournalPath)
		}
		if err != nil {
			return nil, err
		}
		rep.Created, rep.Resumed = true, true
		return st, nil
	}
	// A run killed between creating the store and writing the journal left
	// the tag on it.
	for st, err := range trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Store], error) {
		return svc.ListStores(ctx, trove.ListStoresParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return nil, err
		}
		if st.Metadata[TagKey] == m.ExportID {
			rep.Created, rep.Resumed = true, true
			return &st, nil
		}
	}
	return nil, nil
}

// createTarget creates the store an import fills, tagged with TagKey.
func createTarget(ctx context.Context, svc trove.Services, m *Manifest, name string) (*trove.Store, error) {
	md := maps.Clone(m.Store.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	if _, clash := md[TagKey]; !clash && len(md) < trove.DefaultLimits().MaxMetadataPairs {
		md[TagKey] = m.ExportID
	}
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: name, Description: m.Store.Description, Metadata: md})
	if err != nil {
		return nil, fmt.Errorf("creating the store: %w", err)
	}
	return st, nil
}

// stored is what the target holds at a path.
type stored struct{ id, sha string }

// listPaths returns every live memory of the store by path.
func listPaths(ctx context.Context, svc trove.Services, storeID string) (map[string]stored, error) {
	out := map[string]stored{}
	for it, err := range trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return nil, fmt.Errorf("listing the target store: %w", err)
		}
		if it.Memory != nil {
			out[it.Memory.Path] = stored{it.Memory.ID, it.Memory.SHA256}
		}
	}
	return out, nil
}

// importMemory creates mem unless the store holds its path already.
func importMemory(ctx context.Context, svc trove.Services, storeID string, mem *Memory, content string, have map[string]stored, rep *ImportReport) error {
	if cur, ok := have[mem.Path]; ok {
		if cur.sha == mem.ContentSHA256 {
			rep.Present = append(rep.Present, mem.Path)
		} else {
			rep.Conflicts = append(rep.Conflicts, Conflict{Path: mem.Path, ArchiveSHA256: mem.ContentSHA256, StoreSHA256: cur.sha})
		}
		return nil
	}
	got, err := svc.CreateMemory(ctx, storeID, trove.CreateMemoryParams{Path: mem.Path, Content: content})
	if err == nil {
		have[mem.Path] = stored{got.ID, got.SHA256}
		rep.Written = append(rep.Written, mem.Path)
		rep.written = append(rep.written, got.ID)
		return nil
	}
	var te *trove.Error
	if !errors.As(err, &te) || te.Code != trove.EPATHCONFLICT {
		return fmt.Errorf("creating %s: %w", mem.Path, err)
	}
	c := Conflict{Path: mem.Path, ArchiveSHA256: mem.ContentSHA256, ConflictingPath: te.ConflictingPath}
	if te.ConflictingPath == mem.Path && te.ConflictingMemoryID != "" {
		// Written by someone else since the listing.
		cur, gerr := svc.GetMemory(ctx, storeID, te.ConflictingMemoryID, trove.ViewBasic)
		if gerr == nil && cur.SHA256 == mem.ContentSHA256 {
			rep.Present = append(rep.Present, mem.Path)
			return nil
		}
		if gerr == nil {
			c.StoreSHA256, c.ConflictingPath = cur.SHA256, ""
		}
	}
	rep.Conflicts = append(rep.Conflicts, c)
	return nil
}

func readJournal(path, exportID string) (*journal, error) {
	j := &journal{ExportID: exportID, Targets: map[string]*journalEntry{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the import journal: %w", err)
	}
	var old journal
	if err := json.Unmarshal(raw, &old); err != nil {
		return nil, fmt.Errorf("the import journal %s is damaged (%v): remove it to start over", path, err)
	}
	if old.ExportID != exportID {
		// The journal of another archive that had the same file name.
		return j, nil
	}
	if old.Targets != nil {
		j.Targets = old.Targets
	}
	return j, nil
}

// writeJournal replaces the journal atomically (a crash leaves the old one
// or the new one).
func writeJournal(path string, j *journal) error {
	raw, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(raw, '\n'), 0o644)
}
