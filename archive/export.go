package archive

import (
	"archive/tar"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trovehq/trove"
)

// ExportOptions tune Export. The zero value is valid.
type ExportOptions struct {
	// Source is recorded in the manifest as where the store came from (a
	// URL, or "local"); it must not hold a credential.
	Source string
	// Progress, when not nil, is called after each memory and once with
	// the number of versions.
	Progress func(Progress)
	// Now returns the export time; nil means time.Now.
	Now func() time.Time
}

// FileName returns the tar entry name of the memory at path.
func FileName(path string) string {
	return MemoriesDir + strings.TrimPrefix(path, "/")
}

// Export writes the store of src to w as a gzip-compressed tar (see the
// package comment) and returns its manifest. Each memory's file holds
// exactly the content it was read with, and the manifest's hash is that
// content's SHA-256. Memories and versions are read in separate listings:
// under concurrent writes the manifest's history may be newer than a file,
// never inconsistent with the file's own hash. On error, what was written
// to w is not a valid archive.
func Export(ctx context.Context, src Source, w io.Writer, opts ExportOptions) (*Manifest, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	progress := opts.Progress
	if progress == nil {
		progress = func(Progress) {}
	}
	st, err := src.Store(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the store: %w", err)
	}
	id, err := newExportID()
	if err != nil {
		return nil, err
	}
	m := &Manifest{
		Format: Format, FormatVersion: FormatVersion, ExportID: id,
		ExportedAt: now().UTC(), Source: opts.Source,
		Store: Store{
			ID: st.ID, Name: st.Name, Description: st.Description,
			Metadata:  maps.Clone(st.Metadata),
			CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, ArchivedAt: st.ArchivedAt,
		},
		Memories: []Memory{},
		Versions: []Version{},
	}
	if m.Store.Metadata == nil {
		m.Store.Metadata = map[string]string{}
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	err = src.EachMemory(ctx, func(mem *trove.Memory) error {
		if mem.Content == nil {
			return fmt.Errorf("memory %s (%s) came without content", mem.ID, mem.Path)
		}
		content := *mem.Content
		sum := sha256.Sum256([]byte(content))
		hash := hex.EncodeToString(sum[:])
		if mem.SHA256 != "" && mem.SHA256 != hash {
			return fmt.Errorf("memory %s (%s): the server's content_sha256 %s does not match its content (%s)", mem.ID, mem.Path, mem.SHA256, hash)
		}
		name := FileName(mem.Path)
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(content)),
			ModTime: mem.UpdatedAt, Format: tar.FormatPAX,
		}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, content); err != nil {
			return err
		}
		m.Memories = append(m.Memories, Memory{
			ID: mem.ID, Path: mem.Path, File: name, ContentSHA256: hash, SizeBytes: len(content),
			VersionID: mem.VersionID, CreatedAt: mem.CreatedAt, UpdatedAt: mem.UpdatedAt,
		})
		progress(Progress{Phase: "memories", Done: len(m.Memories), Total: -1, Path: mem.Path})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("exporting memories: %w", err)
	}
	err = src.EachVersion(ctx, func(v *trove.MemoryVersion) error {
		m.Versions = append(m.Versions, versionOf(v))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("exporting versions: %w", err)
	}
	slices.SortFunc(m.Versions, func(a, b Version) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	progress(Progress{Phase: "versions", Done: len(m.Versions), Total: len(m.Versions)})
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	raw = append(raw, '\n')
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg, Name: ManifestName, Mode: 0o644, Size: int64(len(raw)),
		ModTime: m.ExportedAt, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(raw); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return m, nil
}

// versionOf converts a domain version; redaction clears path, hash and size.
func versionOf(v *trove.MemoryVersion) Version {
	out := Version{
		ID: v.ID, MemoryID: v.MemoryID, Operation: string(v.Operation),
		CreatedBy: actorOf(v.CreatedBy), CreatedAt: v.CreatedAt,
		Redacted: v.RedactedAt != nil, RedactedAt: v.RedactedAt, RedactedBy: actorOf(v.RedactedBy),
	}
	if !out.Redacted {
		out.Path, out.ContentSHA256, out.SizeBytes = v.Path, v.SHA256, v.SizeBytes
	}
	return out
}

func newExportID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "export_" + hex.EncodeToString(b[:]), nil
}
