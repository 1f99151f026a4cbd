package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/trovehq/trove"
)

// memAPI is the slice of the memory API the multi-node test drives. It has
// two implementations: core.Service over its own pool (a node in process)
// and a plain net/http client of a `trove serve` process. Errors carry
// trove codes.
type memAPI interface {
	// Create returns the new memory's ID and version ID.
	Create(ctx context.Context, storeID, path, content string) (id, versionID string, err error)
	// Update changes content or path (one of them non-nil) with a
	// precondition, returning the memory's version ID afterwards.
	Update(ctx context.Context, storeID, id string, content, path *string, precondition string) (versionID string, err error)
	// Get returns a memory's path and content.
	Get(ctx context.Context, storeID, id string) (path, content string, err error)
	// Delete deletes a memory.
	Delete(ctx context.Context, storeID, id string) error
	// VersionIDs returns every version of a memory (all pages), with
	// whether each is a deleted version.
	VersionIDs(ctx context.Context, storeID, memoryID string) (map[string]trove.Operation, error)
	// Count returns the number of live memories in the store (all pages).
	Count(ctx context.Context, storeID string) (int, error)
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// ---- the model ----

// Each slot k has two non-overlapping paths, /race/k and /moved/k. Clients
// race to create memories there, rename the slot's memory between the two,
// update its content with content_sha256 preconditions, read it, and
// delete memories they created. The model is the sequential specification
// of the API on one slot; porcupine checks that every slot's history is
// linearizable.

var slotPaths = [2]string{"/race/%d", "/moved/%d"}

func slotPath(slot, i int) string { return fmt.Sprintf(slotPaths[i], slot) }

type opKind int

const (
	opCreate opKind = iota
	opUpdate
	opRename
	opRead
	opDelete
)

type linInput struct {
	slot    int
	kind    opKind
	id      string // target memory (not for create)
	path    int    // create, rename: index into slotPaths
	content string // create, update
	pre     string // update, rename: precondition sha ("" for none)
}

type linOutput struct {
	code    string // "" for success, a trove code, or "unknown" (outcome not known)
	id      string // create: the new memory's ID
	path    int    // read
	content string // read
}

// linState is one slot: the memory ID and content at each of its two paths
// ("" ID: free).
type linState struct {
	ids      [2]string
	contents [2]string
}

func (s linState) find(id string) int {
	for i := range s.ids {
		if s.ids[i] == id && id != "" {
			return i
		}
	}
	return -1
}

// apply returns the states that in, answered with out, may lead to from s;
// none when out is impossible from s.
func apply(s linState, in linInput, out linOutput) (next []linState) {
	if out.code == "unknown" {
		// A call whose outcome is unknown may or may not have happened. A
		// create we could not name occupies its path with an unknown ID.
		ok := linOutput{id: "?"}
		return append([]linState{s}, apply(s, in, ok)...)
	}
	switch in.kind {
	case opCreate:
		if s.ids[in.path] != "" {
			if out.code == trove.EPATHCONFLICT {
				return []linState{s}
			}
			return nil
		}
		if out.code != "" {
			return nil
		}
		s.ids[in.path], s.contents[in.path] = out.id, in.content
		return []linState{s}
	case opRead:
		i := s.find(in.id)
		if i < 0 {
			if out.code == trove.ENOTFOUND {
				return []linState{s}
			}
			return nil
		}
		if out.code == "" && out.path == i && out.content == s.contents[i] {
			return []linState{s}
		}
		return nil
	case opDelete:
		i := s.find(in.id)
		if i < 0 {
			if out.code == trove.ENOTFOUND {
				return []linState{s}
			}
			return nil
		}
		if out.code != "" {
			return nil
		}
		s.ids[i], s.contents[i] = "", ""
		return []linState{s}
	case opUpdate, opRename:
		i := s.find(in.id)
		if i < 0 {
			if out.code == trove.ENOTFOUND {
				return []linState{s}
			}
			return nil
		}
		content, path := s.contents[i], i
		if in.kind == opUpdate {
			content = in.content
		} else {
			path = in.path
		}
		noop := content == s.contents[i] && path == i
		preFails := in.pre != "" && in.pre != sha(s.contents[i])
		conflict := path != i && s.ids[path] != ""
		var allowed []string
		switch {
		case noop:
			allowed = []string{""}
		case preFails && conflict:
			allowed = []string{trove.EPRECONDITION, trove.EPATHCONFLICT} // order unspecified
		case preFails:
			allowed = []string{trove.EPRECONDITION}
		case conflict:
			allowed = []string{trove.EPATHCONFLICT}
		default:
			allowed = []string{""}
		}
		for _, c := range allowed {
			if c != out.code {
				continue
			}
			if c != "" || noop {
				return []linState{s}
			}
			id := s.ids[i]
			s.ids[i], s.contents[i] = "", ""
			s.ids[path], s.contents[path] = id, content
			return []linState{s}
		}
		return nil
	}
	return nil
}

var slotModel = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[int][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(linInput).slot
			by[k] = append(by[k], op)
		}
		var keys []int
		for k := range by {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{linState{}} },
	Step: func(state, input, output interface{}) []interface{} {
		var out []interface{}
		for _, s := range apply(state.(linState), input.(linInput), output.(linOutput)) {
			out = append(out, s)
		}
		return out
	},
	Equal: func(a, b interface{}) bool { return a.(linState) == b.(linState) },
	DescribeOperation: func(in, out interface{}) string {
		return fmt.Sprintf("%+v -> %+v", in, out)
	},
}

// ---- the workload ----

// recorder collects the history and, per memory, the version IDs of every
// acknowledged write.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
	acked map[string]map[string]bool // memory ID → version IDs returned by acked writes
	// deleted counts acknowledged deletes per memory; unknown marks
	// memories touched by a call whose outcome is unknown.
	deleted map[string]int
	unknown map[string]bool
	counts  map[string]int // outcome counts, for the log
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), acked: map[string]map[string]bool{}, deleted: map[string]int{}, unknown: map[string]bool{}, counts: map[string]int{}}
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) record(client int, in linInput, call int64, out linOutput, versionID string) {
	ret := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if out.code == "unknown" {
		ret = 1 << 62 // may take effect any time after the call
		r.unknown[in.id] = true
	}
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	r.counts[fmt.Sprintf("%d:%s", in.kind, out.code)]++
	id := in.id
	if in.kind == opCreate {
		id = out.id
	}
	if out.code == "" && versionID != "" {
		if r.acked[id] == nil {
			r.acked[id] = map[string]bool{}
		}
		r.acked[id][versionID] = true
	}
	if out.code == "" && in.kind == opDelete {
		r.deleted[id]++
	}
}

// outcome turns an API error into a model output code.
func outcome(err error) string {
	switch c := trove.ErrorCode(err); c {
	case "", trove.EPATHCONFLICT, trove.EPRECONDITION, trove.ENOTFOUND:
		return c
	default:
		return "unknown"
	}
}

// runWorkload drives nodes with clients goroutines doing ops operations
// each on slots slots of storeID, then checks linearizability per slot and
// that every acknowledged write has exactly one version.
func runWorkload(t *testing.T, nodes []memAPI, storeID string, slots, clients, ops int) {
	t.Helper()
	ctx := context.Background()
	rec := newRecorder()

	// Phase 1: every client races to create every slot's first path.
	winners := make([]string, slots)
	var winMu sync.Mutex
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := nodes[c%len(nodes)]
			for k := range slots {
				in := linInput{slot: k, kind: opCreate, path: 0, content: fmt.Sprintf("init-%d-%d", c, k)}
				call := rec.now()
				id, vid, err := n.Create(ctx, storeID, slotPath(k, 0), in.content)
				out := linOutput{code: outcome(err), id: id}
				rec.record(c, in, call, out, vid)
				if out.code == "" {
					winMu.Lock()
					winners[k] = id // porcupine checks there is one winner per slot
					winMu.Unlock()
				} else if out.code != trove.EPATHCONFLICT {
					t.Errorf("create %s: %v", slotPath(k, 0), err)
				}
			}
		}()
	}
	wg.Wait()
	for k, id := range winners {
		if id == "" {
			t.Fatalf("slot %d: no create succeeded", k)
		}
	}

	// Phase 2: mixed operations through every node.
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(c), 42))
			n := nodes[c%len(nodes)]
			known := map[int]string{} // slot → content this client last saw
			mine := map[int]string{}  // slot → a memory this client created
			for i := range ops {
				k := rng.IntN(slots)
				in := linInput{slot: k, id: winners[k]}
				var out linOutput
				var vid string
				var err error
				call := rec.now()
				switch r := rng.IntN(100); {
				case r < 25:
					in.kind = opRead
					var p, content string
					p, content, err = n.Get(ctx, storeID, in.id)
					out.code, out.content = outcome(err), content
					out.path = -1
					for j := range slotPaths {
						if p == slotPath(k, j) {
							out.path = j
						}
					}
					if err == nil {
						known[k] = content
					}
				case r < 50:
					in.kind, in.content = opUpdate, fmt.Sprintf("c%d-%d", c, i)
					if v, ok := known[k]; ok && rng.IntN(10) > 0 {
						in.pre = sha(v)
					}
					vid, err = n.Update(ctx, storeID, in.id, &in.content, nil, in.pre)
					out.code = outcome(err)
					if err == nil {
						known[k] = in.content
					}
				case r < 65:
					in.kind, in.path = opRename, rng.IntN(2)
					if v, ok := known[k]; ok && rng.IntN(2) > 0 {
						in.pre = sha(v)
					}
					p := slotPath(k, in.path)
					vid, err = n.Update(ctx, storeID, in.id, nil, &p, in.pre)
					out.code = outcome(err)
				case mine[k] == "":
					in.kind, in.path, in.id = opCreate, rng.IntN(2), ""
					in.content = fmt.Sprintf("new%d-%d", c, i)
					var id string
					id, vid, err = n.Create(ctx, storeID, slotPath(k, in.path), in.content)
					out.code, out.id = outcome(err), id
					if err == nil {
						mine[k] = id
					}
				default:
					in.kind, in.id = opDelete, mine[k]
					err = n.Delete(ctx, storeID, in.id)
					out.code = outcome(err)
					delete(mine, k)
				}
				if out.code == "unknown" {
					t.Logf("client %d op %d: outcome unknown: %v", c, i, err)
				}
				rec.record(c, in, call, out, vid)
			}
		}()
	}
	wg.Wait()
	t.Logf("history: %d operations; outcomes (kind:code): %v", len(rec.ops), rec.counts)

	res, info := porcupine.CheckOperationsVerbose(slotModel.ToModel(), rec.ops, 30*time.Second)
	switch res {
	case porcupine.Illegal:
		f, err := os.CreateTemp("", "trove-linearizability-*.html")
		if err == nil {
			_ = porcupine.Visualize(slotModel.ToModel(), info, f)
			f.Close()
			t.Fatalf("history is not linearizable; visualization in %s", f.Name())
		}
		t.Fatalf("history is not linearizable")
	case porcupine.Unknown:
		t.Fatalf("linearizability check timed out")
	}

	// Every acknowledged write has exactly one version; failed writes
	// none.
	for id, acked := range rec.acked {
		got, err := nodes[0].VersionIDs(ctx, storeID, id)
		if err != nil {
			t.Fatalf("versions of %s: %v", id, err)
		}
		deletes := 0
		for vid, op := range got {
			if op == trove.OpDeleted {
				deletes++
				continue
			}
			if !acked[vid] && !rec.unknown[id] {
				t.Errorf("memory %s: version %s belongs to no acknowledged write", id, vid)
			}
		}
		for vid := range acked {
			if _, ok := got[vid]; !ok {
				t.Errorf("memory %s: acknowledged version %s is missing", id, vid)
			}
		}
		if deletes != rec.deleted[id] && !rec.unknown[id] {
			t.Errorf("memory %s: %d deleted versions, %d acknowledged deletes", id, deletes, rec.deleted[id])
		}
	}
}
