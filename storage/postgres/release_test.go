package postgres_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/trovehq/trove/storage"
	"github.com/trovehq/trove/storage/postgres"
)

// TestReadGoexitReleasesConnection: a Read whose function never returns
// because its goroutine exits (runtime.Goexit, what t.Fatal does inside a
// Read) gives its connection back: the driver still reads on every pooled
// connection afterwards, and Close returns.
func TestReadGoexitReleasesConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Opened here, not with openDB, whose cleanup would Close the driver
	// and, when this test fails, wait forever: a failure leaves the pool
	// open (the server ends its transactions after IdleInTxTimeout, so the
	// schema can still be dropped).
	db, err := postgres.Open(ctx, testURL(t), postgres.Options{AutoMigrate: true, Schema: newSchema(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	for range 6 { // more than the pool holds
		done := make(chan struct{})
		go func() {
			defer close(done)
			db.Read(ctx, func(tx storage.Tx) error {
				if _, err := tx.KeyList(ctx, ""); err != nil {
					t.Errorf("KeyList: %v", err)
				}
				runtime.Goexit()
				return nil
			})
		}()
		<-done
	}
	// Without the release, the pool has no connection left: the read below
	// would wait for one, and Close for the exited Reads' connections.
	read := make(chan error, 1)
	go func() {
		read <- db.Read(ctx, func(tx storage.Tx) error { _, err := tx.KeyList(ctx, ""); return err })
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("Read after the exited ones: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a Read after the exited ones got no connection in 10 s: theirs were not released")
	}
	closed := make(chan struct{})
	go func() { db.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: a connection is still acquired")
	}
}
