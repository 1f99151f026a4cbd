package apply

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/atomicfile"
)

// Kind is what apply does (or, in a dry run, would do) about one item.
type Kind string

const (
	CreateStore Kind = "create_store" // the store does not exist: created
	UpdateStore Kind = "update_store" // description or declared metadata keys differ: set
	Create      Kind = "create"       // the memory does not exist: created
	Update      Kind = "update"       // the memory holds what apply last wrote: replaced by the declared content
	Unchanged   Kind = "unchanged"    // the store or memory already matches
	Kept        Kind = "kept"         // the memory changed since apply last wrote it (or apply never wrote it): reported, left as it is
)

// Action is one line of the plan.
type Action struct {
	Kind    Kind   `json:"action"`
	Store   string `json:"store"`
	StoreID string `json:"store_id,omitempty"` // "" for a store a dry run would create
	Path    string `json:"path,omitempty"`
	Detail  string `json:"detail,omitempty"`
}

// Result is the plan, carried out unless it was a dry run.
type Result struct {
	Actions []Action `json:"actions"`
	DryRun  bool     `json:"dry_run"`
}

// Count returns how many actions are of kind k.
func (r *Result) Count(k Kind) int {
	n := 0
	for _, a := range r.Actions {
		if a.Kind == k {
			n++
		}
	}
	return n
}

// State records, per target and store ID, the SHA-256 of the content
// apply last wrote (or found already matching) at each declared path. It is
// the precondition of the next apply: a memory is only replaced while it
// still holds that content.
type State struct {
	Targets map[string]map[string]map[string]string `json:"targets"`
}

// LoadState reads the state file at path; a missing file is an empty state.
func LoadState(path string) (*State, error) {
	s := &State{Targets: map[string]map[string]map[string]string{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("the apply state %s is damaged (%v); without it apply overwrites nothing it finds changed, so it is safe to remove", path, err)
	}
	if s.Targets == nil {
		s.Targets = map[string]map[string]map[string]string{}
	}
	return s, nil
}

// Save writes the state to path atomically (a crash leaves the old state or
// the new one).
func (s *State) Save(path string) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(raw, '\n'), 0o644)
}

// StateFor returns the usual state file of the spec at specPath: next to it,
// with ".state.json" appended.
func StateFor(specPath string) string {
	return specPath + ".state.json"
}

// Options tune Apply.
type Options struct {
	// Target names the server or database applied to (a URL or data
	// directory): the state keeps one record per target.
	Target string
	// State is read for preconditions and, unless DryRun, updated with what
	// was applied; nil means an empty state (nothing found changed is
	// overwritten).
	State *State
	// DryRun plans without writing anything.
	DryRun bool
}

// Apply makes the stores of svc match spec, store by store in the order
// declared, and returns every action taken (or planned, with DryRun).
// Stores are found by exact name (several live stores with one name is an
// error); missing ones are created. Memories are created when absent,
// replaced only when they hold what apply last wrote there, and otherwise
// reported as Kept; apply never deletes a memory or a store, and a memory
// apply wrote that is gone is not recreated (Kept). Running it again
// without changes is a no-op: every action Unchanged.
//
// On an error, the result holds what was done before it and opts.State
// records it.
func Apply(ctx context.Context, svc trove.Services, spec *Spec, opts Options) (*Result, error) {
	state := opts.State
	if state == nil {
		state = &State{Targets: map[string]map[string]map[string]string{}}
	}
	res := &Result{Actions: []Action{}, DryRun: opts.DryRun}
	all, err := listStores(ctx, svc)
	if err != nil {
		return res, err
	}
	for i := range spec.Stores {
		if err := applyStore(ctx, svc, &spec.Stores[i], all, state, opts, res); err != nil {
			return res, fmt.Errorf("store %q: %w", spec.Stores[i].Name, err)
		}
	}
	return res, nil
}

func applyStore(ctx context.Context, svc trove.Services, sp *StoreSpec, all []trove.Store, state *State, opts Options, res *Result) error {
	add := func(a Action) { a.Store = sp.Name; res.Actions = append(res.Actions, a) }
	var st *trove.Store
	for i := range all {
		if all[i].Name != sp.Name {
			continue
		}
		if st != nil {
			return trove.Errorf(trove.EINVALID, "several stores are named %q (%s, %s): rename all but one", sp.Name, st.ID, all[i].ID)
		}
		st = &all[i]
	}
	if st == nil {
		desc := ""
		if sp.Description != nil {
			desc = *sp.Description
		}
		if opts.DryRun {
			add(Action{Kind: CreateStore})
			for _, m := range sp.Memories {
				add(Action{Kind: Create, Path: m.Path, Detail: fmt.Sprintf("%d bytes", len(*m.Content))})
			}
			return nil
		}
		created, err := svc.CreateStore(ctx, trove.CreateStoreParams{Name: sp.Name, Description: desc, Metadata: sp.Metadata})
		if err != nil {
			return err
		}
		st = created
		add(Action{Kind: CreateStore, StoreID: st.ID})
	} else {
		var up trove.UpdateStoreParams
		var what []string
		if sp.Description != nil && *sp.Description != st.Description {
			up.Description = sp.Description
			what = append(what, "description")
		}
		keys := make([]string, 0, len(sp.Metadata))
		for k := range sp.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if v, ok := st.Metadata[k]; !ok || v != sp.Metadata[k] {
				if up.Metadata == nil {
					up.Metadata = map[string]*string{}
				}
				val := sp.Metadata[k]
				up.Metadata[k] = &val
				what = append(what, "metadata "+k)
			}
		}
		switch {
		case what == nil:
			add(Action{Kind: Unchanged, StoreID: st.ID})
		case opts.DryRun:
			add(Action{Kind: UpdateStore, StoreID: st.ID, Detail: fmt.Sprint(what)})
		default:
			if _, err := svc.UpdateStore(ctx, st.ID, up); err != nil {
				return err
			}
			add(Action{Kind: UpdateStore, StoreID: st.ID, Detail: fmt.Sprint(what)})
		}
	}

	byStore := state.Targets[opts.Target]
	if byStore == nil {
		byStore = map[string]map[string]string{}
	}
	old := byStore[st.ID]
	// The new record: declared paths only, starting from the old one so
	// that an error part way keeps the record of the paths not reached.
	applied := map[string]string{}
	for _, m := range sp.Memories {
		if h := old[m.Path]; h != "" {
			applied[m.Path] = h
		}
	}
	have, err := listMemories(ctx, svc, st.ID)
	if err != nil {
		return err
	}
	commit := func() {
		if opts.DryRun {
			return
		}
		byStore[st.ID] = applied
		state.Targets[opts.Target] = byStore
	}
	defer commit()
	for _, m := range sp.Memories {
		want := sha(*m.Content)
		cur, exists := have[m.Path]
		last := old[m.Path]
		act := Action{StoreID: st.ID, Path: m.Path}
		switch {
		case exists && cur.SHA256 == want:
			act.Kind = Unchanged
			applied[m.Path] = want
		case exists && last != "" && cur.SHA256 == last:
			act.Kind, act.Detail = Update, fmt.Sprintf("%d bytes", len(*m.Content))
			applied[m.Path] = last
			if !opts.DryRun {
				_, err := svc.UpdateMemory(ctx, st.ID, cur.ID, trove.UpdateMemoryParams{Content: m.Content, PreconditionSHA256: last})
				switch trove.ErrorCode(err) {
				case "":
					applied[m.Path] = want
				case trove.EPRECONDITION:
					act.Kind, act.Detail = Kept, "changed by another writer while applying; not overwritten"
				default:
					return fmt.Errorf("updating %s: %w", m.Path, err)
				}
			}
		case exists:
			act.Kind = Kept
			if last == "" {
				act.Detail = fmt.Sprintf("exists with other content (%.12s…) that apply did not write; not overwritten", cur.SHA256)
			} else {
				act.Detail = fmt.Sprintf("changed since last applied (store %.12s…, applied %.12s…); not overwritten", cur.SHA256, last)
				applied[m.Path] = last
			}
		case last != "":
			act.Kind, act.Detail = Kept, "deleted since last applied; not recreated"
			applied[m.Path] = last
		default:
			act.Kind, act.Detail = Create, fmt.Sprintf("%d bytes", len(*m.Content))
			if !opts.DryRun {
				_, err := svc.CreateMemory(ctx, st.ID, trove.CreateMemoryParams{Path: m.Path, Content: *m.Content})
				var te *trove.Error
				switch {
				case err == nil:
					applied[m.Path] = want
				case errors.As(err, &te) && te.Code == trove.EPATHCONFLICT:
					act.Kind, act.Detail = Kept, fmt.Sprintf("overlaps %s in the store; not created", te.ConflictingPath)
				default:
					return fmt.Errorf("creating %s: %w", m.Path, err)
				}
			}
		}
		add(act)
	}
	return nil
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func listStores(ctx context.Context, svc trove.Services) ([]trove.Store, error) {
	return trove.AllItems(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.Store], error) {
		return svc.ListStores(ctx, trove.ListStoresParams{Limit: 100, Cursor: cursor})
	})
}

func listMemories(ctx context.Context, svc trove.Services, storeID string) (map[string]trove.Memory, error) {
	out := map[string]trove.Memory{}
	for it, err := range trove.Items(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.MemoryListItem], error) {
		return svc.ListMemories(ctx, storeID, trove.ListMemoriesParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return nil, err
		}
		if it.Memory != nil {
			out[it.Memory.Path] = *it.Memory
		}
	}
	return out, nil
}
