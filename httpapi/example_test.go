package httpapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/storage/sqlite"
)

// The official SDK works against Trove by changing its base URL; Client
// offers the same stores as trove.Services.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "trove-example-")
	defer os.RemoveAll(dir)
	db, _ := sqlite.Open(ctx, filepath.Join(dir, "trove.db"), sqlite.Options{AutoMigrate: true})
	defer db.Close()
	svc := core.New(db, core.Options{})
	_, key, _ := svc.CreateKey(ctx, "wrkspc_example", "example")

	srv := httptest.NewServer(httpapi.NewServer(httpapi.Config{Services: svc, Sessions: svc, Auth: svc}))
	defer srv.Close()

	client := anthropic.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey(key))
	store, err := client.Beta.MemoryStores.New(ctx, anthropic.BetaMemoryStoreNewParams{Name: "User Preferences"})
	if err != nil {
		panic(err)
	}
	mem, err := client.Beta.MemoryStores.Memories.New(ctx, store.ID, anthropic.BetaMemoryStoreMemoryNewParams{
		Path:    "/preferences/formatting.md",
		Content: anthropic.String("Always use tabs, not spaces."),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(mem.Path, mem.ContentSizeBytes, mem.ContentSha256[:8])

	var services trove.Services = httpapi.NewClient(srv.URL, key)
	got, err := services.GetMemory(ctx, store.ID, mem.ID, trove.ViewFull)
	if err != nil {
		panic(err)
	}
	fmt.Println(*got.Content)
	// Output:
	// /preferences/formatting.md 28 ba7936d9
	// Always use tabs, not spaces.
}
