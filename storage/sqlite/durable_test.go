package sqlite

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// gateSync makes db's next syncs wait: each call of the WAL sync sends on
// entered and then waits for a value on release (nil: do the real sync;
// an error: fail with it).
func gateSync(db *DB) (entered chan struct{}, release chan error) {
	entered, release = make(chan struct{}), make(chan error)
	real := db.dur.syncWAL
	db.dur.syncWAL = func() error {
		entered <- struct{}{}
		if err := <-release; err != nil {
			return err
		}
		return real()
	}
	return entered, release
}

// writeStore inserts s in its own Write, reporting the result on the
// returned channel.
func writeStore(db *DB, s *trove.Store) chan error {
	done := make(chan error, 1)
	go func() {
		done <- db.Write(context.Background(), func(tx storage.Tx) error {
			return tx.StoreInsert(context.Background(), s)
		})
	}()
	return done
}

// readStore reads s's ID in its own Read.
func readStore(db *DB, id string) chan error {
	done := make(chan error, 1)
	go func() {
		done <- db.Read(context.Background(), func(tx storage.Tx) error {
			_, err := tx.StoreGet(context.Background(), "wrkspc_t", id)
			return err
		})
	}()
	return done
}

// waitBlockedReads spins until n Reads wait for a sync.
func waitBlockedReads(t *testing.T, db *DB, n int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for db.dur.waiting.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d Reads wait for the sync", db.dur.waiting.Load(), n)
		}
		runtime.Gosched()
	}
}

func ready(ch chan error) bool {
	select {
	case err := <-ch:
		ch <- err
		return true
	default:
		return false
	}
}

// A Write is acknowledged only after the WAL sync that covers it, and a Read
// whose snapshot holds the committed but not yet durable change waits for
// that sync too: nobody sees a change that a power cut could still undo.
func TestWritesAndReadsWaitForTheSync(t *testing.T) {
	db := openInternal(t, Options{})
	entered, release := gateSync(db)
	s := newStore(1)
	w := writeStore(db, s)
	<-entered // committed, visible in the WAL, not yet durable
	r := readStore(db, s.ID)
	waitBlockedReads(t, db, 1)
	if ready(w) || ready(r) {
		t.Fatal("a Write or Read returned before the sync covering the Write finished")
	}
	syncs := db.Syncs()
	release <- nil
	if err := <-w; err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := <-r; err != nil {
		t.Fatalf("Read of the synced store: %v", err)
	}
	if got := db.Syncs(); got != syncs+1 {
		t.Errorf("Syncs = %d, want %d", got, syncs+1)
	}
	// With nothing pending a Read does not wait: the gate would block it.
	if err := <-readStore(db, s.ID); err != nil {
		t.Fatalf("Read with nothing pending: %v", err)
	}
}

// While one group's sync is in flight the committer runs the next group,
// and one sync then covers every group that finished meanwhile.
func TestCommitterRunsAheadOfTheSync(t *testing.T) {
	db := openInternal(t, Options{})
	entered, release := gateSync(db)
	first := writeStore(db, newStore(1))
	<-entered
	// The sync of the first group is blocked; these commit anyway and wait
	// in the syncer's queue.
	var later []chan error
	for i := range 3 {
		later = append(later, writeStore(db, newStore(10+i)))
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, w := db.Stats(); w == 4 && len(db.dur.jobs) >= 1 {
			break
		}
		if time.Now().After(deadline) {
			_, w := db.Stats()
			t.Fatalf("%d of 4 Writes committed while the first sync was in flight", w)
		}
		runtime.Gosched()
	}
	for i, w := range later {
		if ready(w) {
			t.Fatalf("later Write %d returned before any sync covered it", i)
		}
	}
	syncs := db.Syncs()
	release <- nil // first group's sync
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	<-entered // one sync for everything committed since
	release <- nil
	for i, w := range later {
		if err := <-w; err != nil {
			t.Fatalf("later Write %d: %v", i, err)
		}
	}
	if got := db.Syncs() - syncs; got != 2 {
		t.Errorf("%d syncs for the blocked group and the three after it, want 2", got)
	}
}

// A failed sync is final: the Writes it covered and everything after fail
// with EUNAVAILABLE, since what is on disk is no longer known.
func TestFailedSyncIsFinal(t *testing.T) {
	db := openInternal(t, Options{})
	entered, release := gateSync(db)
	s := newStore(1)
	w := writeStore(db, s)
	<-entered
	r := readStore(db, s.ID)
	waitBlockedReads(t, db, 1)
	errDisk := errors.New("EIO")
	release <- errDisk
	for name, ch := range map[string]chan error{"Write": w, "Read": r} {
		err := <-ch
		if trove.ErrorCode(err) != trove.EUNAVAILABLE || !errors.Is(err, errDisk) {
			t.Errorf("%s after a failed sync = %v, want EUNAVAILABLE wrapping the disk error", name, err)
		}
	}
	if err := <-writeStore(db, newStore(2)); trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("a later Write = %v, want EUNAVAILABLE", err)
	}
	if err := <-readStore(db, s.ID); trove.ErrorCode(err) != trove.EUNAVAILABLE {
		t.Errorf("a later Read = %v, want EUNAVAILABLE", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("Close after a failed sync: %v", err)
	}
}

// The syncer flushes the database's own WAL file.
func TestSyncFlushesTheWAL(t *testing.T) {
	db := openInternal(t, Options{})
	if err := <-writeStore(db, newStore(1)); err != nil {
		t.Fatal(err)
	}
	if db.Syncs() < 2 { // Open's and the Write's
		t.Errorf("Syncs = %d after Open and one Write, want >= 2", db.Syncs())
	}
	// The Write was released after the syncer's flush, so reading its
	// state here is ordered after it.
	held, err := db.dur.wal.Stat()
	if err != nil {
		t.Fatal(err)
	}
	named, err := os.Stat(db.Path() + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(held, named) {
		t.Errorf("the syncer holds %v, not the WAL %s", held.Name(), db.Path()+"-wal")
	}
}
