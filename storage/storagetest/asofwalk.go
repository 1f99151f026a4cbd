package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// testVersionAsOfLongHistory checks VersionAsOf against a model on a
// random history long enough that the drivers read pages by each of their
// plans (storage.VersionAsOfParams.Walk: a walk of the versions' (path,
// memory) pairs, the recent plan, one pass over the history): creates, edits, renames, deletes, a deleted memory's ID created
// again elsewhere, redactions of old versions; at moments across the whole
// history, with each filter (path, prefix), paged by 1, 3 and 50 from
// every kind of position (a redacted version's, a path's, one inside the
// prefix and one before it), with and without content, and with MaxBytes.
// 11 moments and about 400 calls: under a second, and about 30× that
// under -race (SQLite's translated C is instrumented too).
func testVersionAsOfLongHistory(t *testing.T, d storage.Driver) {
	s := insertStore(t, d, newStore("wrkspc_a", secs(0)))
	rng := rand.New(rand.NewPCG(24, 1))
	paths := func() string { return fmt.Sprintf("/d%d/f%d", rng.IntN(3), rng.IntN(6)) }
	live := map[string]string{} // memory ID → path
	taken := func(p string) bool {
		for _, q := range live {
			if q == p {
				return true
			}
		}
		return false
	}
	var all []trove.MemoryVersion
	var gone []string // deleted memory IDs, created again later
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := 0; len(all) < 300; i++ {
			at := secs(10 * (i + 1))
			ids := slices.Sorted(func(yield func(string) bool) {
				for id := range live {
					if !yield(id) {
						return
					}
				}
			})
			var mem, path string
			var op trove.Operation
			switch k := rng.IntN(10); {
			case k < 3 || len(ids) == 0:
				mem, path, op = fmt.Sprintf("mem_%03d", i), paths(), trove.OpCreated
				if len(gone) > 0 && k == 0 {
					mem, gone = gone[0], gone[1:]
				}
				if taken(path) {
					continue
				}
			case k < 6:
				mem, op = ids[rng.IntN(len(ids))], trove.OpModified
				path = live[mem]
			case k < 8:
				mem, path, op = ids[rng.IntN(len(ids))], paths(), trove.OpModified
				if taken(path) {
					continue
				}
			default:
				mem, op = ids[rng.IntN(len(ids))], trove.OpDeleted
				path = live[mem]
			}
			content := fmt.Sprintf("%s at %d%s", mem, i, strings.Repeat(".", rng.IntN(20)))
			v := &trove.MemoryVersion{ID: trove.NewID(trove.PrefixVersion, at), StoreID: s.ID, MemoryID: mem,
				Operation: op, Path: strPtr(path), CreatedAt: at}
			if op != trove.OpDeleted {
				v.Content, v.SizeBytes, v.SHA256 = strPtr(content), intPtr(len(content)), strPtr(sha(content))
			}
			m := &trove.Memory{ID: mem, StoreID: s.ID, Path: path, Content: v.Content, SizeBytes: len(content), SHA256: sha(content),
				VersionID: v.ID, CreatedAt: at, UpdatedAt: at}
			var err error
			switch {
			case op == trove.OpCreated:
				err = tx.MemoryInsert(ctx, m)
				live[mem] = path
			case op == trove.OpModified:
				err = tx.MemoryUpdate(ctx, m)
				live[mem] = path
			default:
				err = tx.MemoryDelete(ctx, s.ID, mem)
				delete(live, mem)
				gone = append(gone, mem)
			}
			if err != nil {
				return err
			}
			if err := tx.VersionInsert(ctx, v); err != nil {
				return err
			}
			all = append(all, *v)
		}
		return nil
	})
	// Redact one old version in fifteen that is not current.
	latest := map[string]int{}
	for i, v := range all {
		latest[v.MemoryID] = i
	}
	write(t, d, func(ctx context.Context, tx storage.Tx) error {
		for i := range all {
			if latest[all[i].MemoryID] == i || all[i].Operation == trove.OpDeleted || i%15 != 4 {
				continue
			}
			if err := tx.VersionRedact(ctx, s.ID, all[i].ID, secs(9000), trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_r"}); err != nil {
				return err
			}
			all[i].Path, all[i].Content, all[i].SizeBytes, all[i].SHA256 = nil, nil, nil, nil
			all[i].RedactedAt = timePtr(secs(9000))
			all[i].RedactedBy = &trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_r"}
		}
		return nil
	})
	key := asOfKey
	model := func(seq int64, p storage.VersionAsOfParams) []trove.MemoryVersion {
		p.Seq = seq
		return asOfModel(all, p)
	}
	redactedSeen := false
	read(t, d, func(ctx context.Context, tx storage.Tx) error {
		for seq := int64(0); seq <= int64(len(all)); seq += 29 {
			for _, f := range []storage.VersionAsOfParams{{}, {Prefix: "/d1/"}, {Path: "/d2/f3"}} {
				whole := model(seq, f)
				for _, v := range whole {
					redactedSeen = redactedSeen || v.Path == nil
				}
				// Starting points: none, before every redacted version, each
				// redacted and every third listed entry's, one before the prefix.
				starts := []*storage.AsOfPosition{nil, {Path: "", MemoryID: "mem_"}, {Path: "/a", MemoryID: "mem_999"}}
				for i, v := range whole {
					if i%3 != 1 && v.Path != nil {
						continue
					}
					starts = append(starts, &storage.AsOfPosition{Path: key(v), MemoryID: v.MemoryID})
				}
				for _, limit := range []int{1, 3, 50} {
					for j, after := range starts {
						if limit == 50 && j > 0 {
							break // a long page: from the start
						}
						{
							// With content every other start (and MaxBytes
							// at limit 3): each call costs, under -race,
							// about a hundred times what it does without.
							withContent := (j+limit)%2 == 0
							p := f
							p.StoreID, p.Seq, p.After, p.Limit, p.WithContent = s.ID, seq, after, limit, withContent
							if withContent && limit == 3 {
								p.MaxBytes = 30
							}
							got, err := tx.VersionAsOf(ctx, p)
							if err != nil {
								return err
							}
							if want := model(seq, p); !reflect.DeepEqual(want, got) {
								diff := gocmp.Diff(want, got)
								// Errorf and return, not Fatalf: the read transaction ends first.
								t.Errorf("VersionAsOf seq %d of %d %+v after %+v (-model +got):\n%s", seq, len(all), f, after, diff)
								return errors.New("VersionAsOf differs from the model")
							}
						}
					}
				}
			}
		}
		return nil
	})
	if !redactedSeen {
		t.Fatal("no listing held a redacted version: the history does not exercise them")
	}
}
