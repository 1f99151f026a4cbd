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
	// Manifest is the archive's manifest: the history, which the target's
	// own versions do not carry (they start anew with this import).
	Manifest *Manifest `json:"-"`
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

// ReadManifest reads the manifest of the archive at path and checks the
// archive whole: a supported format, valid distinct paths, and exactly one
// file per memory whose SHA-256 is the manifest's.
func ReadManifest(path string) (*Manifest, error) {
	var m *Manifest
	sums := map[string]string{}
	err := eachEntry(path, func(h *tar.Header, r io.Reader) error {
		if h.Name != ManifestName {
			if _, dup := sums[h.Name]; dup {
				return fmt.Errorf("%s: entry %q appears twice", path, h.Name)
			}
			hw := sha256.New()
			if _, err := io.Copy(hw, r); err != nil {
				return fmt.Errorf("%s: reading %q: %v", path, h.Name, err)
			}
			sums[h.Name] = hex.EncodeToString(hw.Sum(nil))
			return nil
		}
		if m != nil {
			return fmt.Errorf("%s: two %s entries", path, ManifestName)
		}
		m = &Manifest{}
		dec := json.NewDecoder(r)
		if err := dec.Decode(m); err != nil {
			return fmt.Errorf("%s: %s is not valid JSON: %v", path, ManifestName, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("%s is not a trove archive: it has no %s", path, ManifestName)
	}
	if m.Format != Format || m.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%s: unsupported archive format %q version %d (this trove reads %q version %d)", path, m.Format, m.FormatVersion, Format, FormatVersion)
	}
	if m.ExportID == "" || m.Store.Name == "" {
		return nil, fmt.Errorf("%s: the manifest has no export_id or store name", path)
	}
	seen := map[string]bool{}
	for _, mem := range m.Memories {
		if err := trove.ValidatePath(mem.Path, 1<<20, 1<<20); err != nil {
			return nil, fmt.Errorf("%s: memory path %q: %v", path, mem.Path, trove.ErrorMessage(err))
		}
		if mem.File != FileName(mem.Path) || seen[mem.File] {
			return nil, fmt.Errorf("%s: memory %q has file %q, want %q once", path, mem.Path, mem.File, FileName(mem.Path))
		}
		seen[mem.File] = true
		sum, ok := sums[mem.File]
		if !ok {
			return nil, fmt.Errorf("%s: memory %q has no file %q in the archive", path, mem.Path, mem.File)
		}
		if sum != mem.ContentSHA256 {
			return nil, fmt.Errorf("%s: %q does not match its content_sha256 in the manifest: the archive is damaged", path, mem.File)
		}
	}
	for name := range sums {
		if !seen[name] {
			return nil, fmt.Errorf("%s: entry %q is not in the manifest", path, name)
		}
	}
	return m, nil
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
// a Conflict and left as it is. Every file is checked against the
// manifest's hash before it is written.
//
// Import is resumable: re-run after an interruption, it finds the store it
// created (journal, else TagKey) and skips what is already there, so it
// ends with each memory once. The target's versions start anew (attributed
// to the importing credential); the exported history stays in the
// manifest, returned in the report.
func Import(ctx context.Context, svc trove.Services, path string, opts ImportOptions) (*ImportReport, error) {
	m, err := ReadManifest(path)
	if err != nil {
		return nil, err
	}
	rep := &ImportReport{Manifest: m, HistoryVersions: len(m.Versions), Written: []string{}, Present: []string{}, Conflicts: []Conflict{}}
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
		j.Targets[opts.Target] = entry
		return writeJournal(opts.JournalPath, j)
	}

	st, err := importTarget(ctx, svc, m, opts, entry, rep)
	if err != nil {
		return nil, err
	}
	rep.Store, rep.StoreID = st, st.ID
	if entry == nil || entry.StoreID != st.ID {
		entry = &journalEntry{StoreID: st.ID}
	}
	entry.Done = false
	if err := save(); err != nil {
		return rep, fmt.Errorf("writing the import journal: %w", err)
	}

	have, err := listPaths(ctx, svc, st.ID)
	if err != nil {
		return rep, err
	}
	byFile := make(map[string]*Memory, len(m.Memories))
	for i := range m.Memories {
		byFile[m.Memories[i].File] = &m.Memories[i]
	}
	done := 0
	seen := map[string]bool{}
	progress := opts.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	err = eachEntry(path, func(h *tar.Header, r io.Reader) error {
		if h.Name == ManifestName {
			return nil
		}
		mem := byFile[h.Name]
		if mem == nil {
			return fmt.Errorf("%s: entry %q is not in the manifest", path, h.Name)
		}
		if seen[h.Name] {
			return fmt.Errorf("%s: entry %q appears twice", path, h.Name)
		}
		seen[h.Name] = true
		raw, err := io.ReadAll(io.LimitReader(r, int64(mem.SizeBytes)+1))
		if err != nil {
			return fmt.Errorf("%s: reading %q: %v", path, h.Name, err)
		}
		sum := sha256.Sum256(raw)
		if hex.EncodeToString(sum[:]) != mem.ContentSHA256 {
			return fmt.Errorf("%s: %q does not match its content_sha256 in the manifest: the archive is damaged", path, h.Name)
		}
		if err := importMemory(ctx, svc, st.ID, mem, string(raw), have, rep); err != nil {
			return err
		}
		done++
		progress(Progress{Phase: "import", Done: done, Total: len(m.Memories), Path: mem.Path})
		return nil
	})
	if err != nil {
		return rep, err
	}
	if len(seen) != len(m.Memories) {
		return rep, fmt.Errorf("%s: %d memories of the manifest have no file in the archive", path, len(m.Memories)-len(seen))
	}
	if st.Metadata[TagKey] == m.ExportID && m.Store.Metadata[TagKey] != m.ExportID && rep.Created {
		st, err = svc.UpdateStore(ctx, st.ID, trove.UpdateStoreParams{Metadata: map[string]*string{TagKey: nil}})
		if err != nil {
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

// importTarget returns the store to import into: opts.StoreID, the one the
// journal or the tag names, or a new one.
func importTarget(ctx context.Context, svc trove.Services, m *Manifest, opts ImportOptions, entry *journalEntry, rep *ImportReport) (*trove.Store, error) {
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
	cursor := ""
	for {
		page, err := svc.ListStores(ctx, trove.ListStoresParams{Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for i := range page.Data {
			if page.Data[i].Metadata[TagKey] == m.ExportID {
				rep.Created, rep.Resumed = true, true
				return &page.Data[i], nil
			}
		}
		if page.NextPage == "" {
			break
		}
		cursor = page.NextPage
	}
	md := maps.Clone(m.Store.Metadata)
	if md == nil {
		md = map[string]string{}
	}
	if _, clash := md[TagKey]; !clash && len(md) < trove.DefaultLimits().MaxMetadataPairs {
		md[TagKey] = m.ExportID
	}
	st, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: m.Store.Name, Description: m.Store.Description, Metadata: md})
	if err != nil {
		return nil, fmt.Errorf("creating the store: %w", err)
	}
	rep.Created = true
	return st, nil
}

// stored is what the target holds at a path.
type stored struct{ id, sha string }

// listPaths returns every live memory of the store by path.
func listPaths(ctx context.Context, svc trove.Services, storeID string) (map[string]stored, error) {
	out := map[string]stored{}
	cursor := ""
	for {
		page, err := svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, fmt.Errorf("listing the target store: %w", err)
		}
		for _, it := range page.Data {
			if it.Memory != nil {
				out[it.Memory.Path] = stored{it.Memory.ID, it.Memory.SHA256}
			}
		}
		if page.NextPage == "" {
			return out, nil
		}
		cursor = page.NextPage
	}
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
