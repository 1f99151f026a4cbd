// Package apply makes memory stores match a declaration: stores (name,
// description, metadata) and their seed memories, read from YAML
// (docs/apply.md). Applying is idempotent, can be planned without writing
// (dry run), and never overwrites a memory that changed since apply last
// wrote it: apply keeps the hash it last applied at each path in a state
// file, and only updates a memory whose current hash is that hash (as a
// content_sha256 precondition, so a concurrent writer also wins).
package apply

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"

	"github.com/trovehq/trove"
)

// Spec is a stores.yaml file.
type Spec struct {
	Stores []StoreSpec `yaml:"stores"`
}

// StoreSpec declares one store, found by its exact name. Description nil
// leaves the store's description as it is; Metadata sets the keys it names
// and leaves the others.
type StoreSpec struct {
	Name        string            `yaml:"name"`
	Description *string           `yaml:"description"`
	Metadata    map[string]string `yaml:"metadata"`
	Memories    []MemorySpec      `yaml:"memories"`
}

// MemorySpec declares one seed memory: its content inline or from a file
// (relative to the YAML file's directory), exactly one of the two.
type MemorySpec struct {
	Path    string  `yaml:"path"`
	Content *string `yaml:"content"`
	File    string  `yaml:"file"`
}

// MaxSpecBytes bounds the YAML file itself.
const MaxSpecBytes = 16 << 20

// LoadOptions tune LoadWith. The zero value reads files under the YAML's
// directory of at most trove.DefaultLimits().MaxContentBytes.
type LoadOptions struct {
	// AllowOutside lets a memory's file be an absolute path or one that
	// leaves the YAML file's directory (through "..", or a symbolic link
	// that resolves outside it). Without it such a file is refused: a
	// stores.yaml from elsewhere must not upload ~/.ssh/id_ed25519.
	AllowOutside bool
	// MaxContentBytes is the largest file read (0: the documented content
	// limit); a larger one is refused without being read further.
	MaxContentBytes int
}

// Load is LoadWith(path, LoadOptions{}).
func Load(path string) (*Spec, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith reads and checks the spec at path: one YAML document (a second
// one is an error, never ignored) of known fields only, store names given
// once, valid distinct memory paths, each with content or a file of UTF-8
// text (read now, so Content is set for every memory on return). A file is
// read only when it is a regular file (a device, FIFO or directory is
// refused before it is read) of at most opts.MaxContentBytes bytes under
// the YAML file's directory, unless opts.AllowOutside.
func LoadWith(path string, opts LoadOptions) (*Spec, error) {
	lim := trove.DefaultLimits()
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = lim.MaxContentBytes
	}
	raw, err := readBounded(path, MaxSpecBytes, true)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, yamlError(path, err)
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s holds more than one YAML document (a \"---\" line): put every store under the first document's \"stores:\" list", path)
	}
	if len(s.Stores) == 0 {
		return nil, fmt.Errorf("%s declares no stores (a top-level \"stores:\" list)", path)
	}
	dir := filepath.Dir(path)
	names := map[string]bool{}
	for i := range s.Stores {
		st := &s.Stores[i]
		if st.Name == "" {
			return nil, fmt.Errorf("%s: store %d has no name", path, i+1)
		}
		if names[st.Name] {
			return nil, fmt.Errorf("%s: store %q is declared twice", path, st.Name)
		}
		names[st.Name] = true
		paths := map[string]bool{}
		for j := range st.Memories {
			m := &st.Memories[j]
			if err := trove.ValidatePath(m.Path, lim.MaxPathBytes, lim.MaxPathSegments); err != nil {
				return nil, fmt.Errorf("%s: store %q, memory %d: %s", path, st.Name, j+1, trove.ErrorMessage(err))
			}
			if paths[m.Path] {
				return nil, fmt.Errorf("%s: store %q: memory %s is declared twice", path, st.Name, m.Path)
			}
			paths[m.Path] = true
			switch {
			case (m.Content == nil) == (m.File == ""):
				return nil, fmt.Errorf("%s: store %q, memory %s: give exactly one of content and file", path, st.Name, m.Path)
			case m.File != "":
				b, err := readSeed(dir, m.File, opts)
				if err != nil {
					return nil, fmt.Errorf("%s: store %q, memory %s: %v", path, st.Name, m.Path, err)
				}
				c := string(b)
				m.Content = &c
			}
			if len(*m.Content) > opts.MaxContentBytes {
				return nil, fmt.Errorf("%s: store %q, memory %s: content is %d bytes; the limit is %d bytes", path, st.Name, m.Path, len(*m.Content), opts.MaxContentBytes)
			}
			if err := trove.CheckContentUTF8(*m.Content); err != nil {
				return nil, fmt.Errorf("%s: store %q, memory %s: %s", path, st.Name, m.Path, trove.ErrorMessage(err))
			}
		}
	}
	return &s, nil
}

// readSeed reads a memory's file: name relative to dir, which it may not
// leave (no absolute path, no "..", no symbolic link resolving outside,
// checked by os.Root) unless opts.AllowOutside.
func readSeed(dir, name string, opts LoadOptions) ([]byte, error) {
	if opts.AllowOutside {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return readBounded(name, int64(opts.MaxContentBytes), false)
	}
	if filepath.IsAbs(name) || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) {
		return nil, fmt.Errorf("file %s is an absolute path: files are read only under the YAML file's directory (--allow-outside reads others)", name)
	}
	for _, seg := range strings.FieldsFunc(name, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if seg == ".." {
			return nil, fmt.Errorf("file %s leaves the YAML file's directory: files are read only under it (--allow-outside reads others)", name)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		if strings.Contains(err.Error(), "escapes") {
			return nil, fmt.Errorf("file %s resolves outside the YAML file's directory (a symbolic link): files are read only under it (--allow-outside reads others)", name)
		}
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(name, fi)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpen(f, name, int64(opts.MaxContentBytes))
}

// readBounded reads the regular file at name, refusing anything else (by
// type before reading: a FIFO or /dev/zero is never read) and refusing it
// when it holds more than max bytes. allowStdin lets name be a pipe or
// terminal on standard input ("-" is not special: /dev/stdin is).
func readBounded(name string, max int64, allowPipe bool) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() && !(allowPipe && fi.Mode()&os.ModeNamedPipe != 0 && isStdin(name)) {
		return nil, notRegular(name, fi)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if allowPipe && isStdin(name) {
		return readLimited(f, name, max)
	}
	return readOpen(f, name, max)
}

func isStdin(name string) bool { return name == "/dev/stdin" || name == "/dev/fd/0" }

// readOpen checks that the opened f is still a regular file (it may have
// been replaced since the stat) and reads at most max bytes of it.
func readOpen(f *os.File, name string, max int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(name, fi)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("file %s is %d bytes; the limit is %d bytes", name, fi.Size(), max)
	}
	return readLimited(f, name, max)
}

func readLimited(r io.Reader, name string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("file %s is larger than the limit of %d bytes", name, max)
	}
	return b, nil
}

func notRegular(name string, fi os.FileInfo) error {
	what := "not a regular file"
	switch m := fi.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&os.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&os.ModeDevice != 0:
		what = "a device"
	case m&os.ModeSocket != 0:
		what = "a socket"
	}
	return fmt.Errorf("file %s is %s: only regular files are read", name, what)
}
