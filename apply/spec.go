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
	"unicode/utf8"

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

// Load reads and checks the spec at path: known fields only, store names
// given once, valid distinct memory paths, each with content or a file of
// UTF-8 text (read now, so Content is set for every memory on return).
func Load(path string) (*Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var s Spec
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if len(s.Stores) == 0 {
		return nil, fmt.Errorf("%s declares no stores (a top-level \"stores:\" list)", path)
	}
	lim := trove.DefaultLimits()
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
				f := m.File
				if !filepath.IsAbs(f) {
					f = filepath.Join(filepath.Dir(path), f)
				}
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, fmt.Errorf("%s: store %q, memory %s: %v", path, st.Name, m.Path, err)
				}
				c := string(b)
				m.Content = &c
			}
			if !utf8.ValidString(*m.Content) {
				return nil, fmt.Errorf("%s: store %q, memory %s: content is not UTF-8 text", path, st.Name, m.Path)
			}
		}
	}
	return &s, nil
}
