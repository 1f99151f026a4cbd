package storefs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/memtool"
	"github.com/trovehq/trove/memtool/storefs"
	"github.com/trovehq/trove/storage/sqlite"
)

// Example runs Claude's memory tool over a Trove memory store in a local
// SQLite database. With a remote server, pass httpapi.NewClient(url, key)
// instead of the core service: the rest is unchanged.
func Example() {
	dir, _ := os.MkdirTemp("", "trove-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	db, err := sqlite.Open(ctx, filepath.Join(dir, "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	svc := core.New(db, core.Options{})

	// Who the writes are attributed to (a local service needs a principal).
	me := &trove.Principal{WorkspaceID: "wrkspc_default", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_example"}}
	store, err := svc.CreateStore(trove.WithPrincipal(ctx, me), trove.CreateStoreParams{Name: "Agent memory"})
	if err != nil {
		panic(err)
	}

	// The memory tool over that store: /memories/a.md is the memory /a.md.
	fsys := storefs.New(svc, store.ID, storefs.Options{Principal: me})
	tool := memtool.New(fsys, memtool.Options{})

	// Execute takes the input of a memory tool_use block, as Claude sends it.
	for _, input := range []string{
		`{"command":"create","path":"/memories/prefs.md","file_text":"tea: green"}`,
		`{"command":"str_replace","path":"/memories/prefs.md","old_str":"green","new_str":"oolong"}`,
		`{"command":"view","path":"/memories/prefs.md"}`,
	} {
		fmt.Println(tool.Execute(ctx, []byte(input)))
	}

	// Every write is a version in the store, reviewable through the API.
	versions, _ := svc.ListVersions(trove.WithPrincipal(ctx, me), store.ID, trove.ListVersionsParams{})
	fmt.Println(len(versions.Data), "versions")
	// Output:
	// File created successfully at: /memories/prefs.md
	// The memory file has been edited. Here is the snippet showing the change (with line numbers):
	//      1	tea: oolong
	// Here's the content of /memories/prefs.md with line numbers:
	//      1	tea: oolong
	// 2 versions
}
