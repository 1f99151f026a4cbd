package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/trovehq/trove"
)

// Durability pipeline.
//
// The writer connection runs with synchronous=NORMAL: a COMMIT appends the
// group's WAL frames with write(2) and returns without waiting for the disk.
// The committer hands every finished group to the syncer goroutine and goes
// on with the next group at once, while the syncer makes the WAL durable
// with one fdatasync(2) for every group that finished since its last sync
// and only then releases those groups' Writes. A Write therefore still
// returns only once its changes are on disk, but the committer no longer sits
// idle for the length of a disk flush per group: executing group N+1
// overlaps flushing group N.
//
// Checkpoints stay SQLite's own: in WAL mode with synchronous=NORMAL it
// syncs the WAL before copying it into the database file and the database
// file after, so frames are never lost to a checkpoint, and SQLite's
// guarantee that NORMAL cannot corrupt the database holds unchanged.
//
// Reads never return what is not yet durable. A group's changes become
// visible to readers at its COMMIT, one fdatasync before its Writes are
// acknowledged, so visibility is tracked with two counters: commitSeq is
// bumped before every COMMIT (and every raw job on the writer connection),
// durableSeq is advanced by the syncer to the commitSeq its sync covered.
// A Read loads commitSeq after its snapshot was taken and, if durableSeq is
// behind, waits for the sync in flight (at most one disk flush) before it
// returns. Errors a Write gets from its own fn (a failed precondition, a
// path conflict) are held back the same way, since they may rest on changes
// not yet durable.
//
// A failed sync is final: the kernel may have dropped the dirty pages, so
// what the database holds on disk is unknown. Every Write that waited for
// it, and every later Read and Write, fails with EUNAVAILABLE until the
// process reopens the database (SQLite then recovers the WAL from disk).
//
// Processes other than this one (another trove binary on the same file)
// read the database through their own connections and are not held back:
// they can see a group up to one disk flush before it is durable.

// syncJob is one group (or raw job) the committer has finished, waiting for
// the WAL to be durable up to seq.
type syncJob struct {
	seq  uint64
	reqs []*writeReq
}

// durability is the state the committer, the syncer and readers share.
type durability struct {
	walPath string
	// syncWAL makes the WAL durable; tests replace it before the first
	// Write to inject slow or failing disks.
	syncWAL func() error

	commitSeq  atomic.Uint64
	durableSeq atomic.Uint64
	failed     atomic.Pointer[trove.Error]
	syncs      atomic.Int64

	mu      sync.Mutex
	advance chan struct{} // closed (and replaced) when durableSeq advances or syncing fails
	waiting atomic.Int32  // Reads blocked in waitDurable, for tests

	jobs     chan *syncJob
	syncDone chan struct{} // closed when the syncer has exited

	wal       *os.File // opened at the first sync
	dirSynced bool
}

func (d *durability) init(dbPath string) {
	d.walPath = dbPath + "-wal"
	d.syncWAL = d.fdatasyncWAL
	d.advance = make(chan struct{})
	d.jobs = make(chan *syncJob, 1024)
	d.syncDone = make(chan struct{})
}

// beforeCommit must be called right before a statement that can make
// changes visible to readers (COMMIT, or a raw job); it returns the
// sequence number a sync must cover for those changes to be durable.
func (d *durability) beforeCommit() uint64 { return d.commitSeq.Add(1) }

// err returns the sticky sync failure, or nil.
func (d *durability) err() error {
	if e := d.failed.Load(); e != nil {
		return e
	}
	return nil
}

// waitDurable returns once everything committed before it was called is
// durable (immediately when nothing is pending), EUNAVAILABLE if syncing
// failed, or ctx's error once ctx is done.
func (d *durability) waitDurable(ctx context.Context) error {
	seq := d.commitSeq.Load()
	for {
		if err := d.err(); err != nil {
			return err
		}
		if d.durableSeq.Load() >= seq {
			return nil
		}
		d.mu.Lock()
		ch := d.advance
		d.mu.Unlock()
		// Re-check: the syncer may have advanced between the load and
		// taking the channel.
		if d.durableSeq.Load() >= seq || d.failed.Load() != nil {
			continue
		}
		d.waiting.Add(1)
		select {
		case <-ch:
			d.waiting.Add(-1)
		case <-ctx.Done():
			d.waiting.Add(-1)
			return ctxError(ctx.Err())
		}
	}
}

// wake releases every waitDurable.
func (d *durability) wake() {
	d.mu.Lock()
	close(d.advance)
	d.advance = make(chan struct{})
	d.mu.Unlock()
}

// syncLoop is the syncer: it takes every finished job queued, syncs once if
// any of them is not durable yet, and releases their Writes. It exits when
// jobs is closed and drained.
func (d *durability) syncLoop() {
	defer close(d.syncDone)
	defer d.closeWAL()
	batch := make([]*syncJob, 0, 64)
	for job := range d.jobs {
		batch = append(batch[:0], job)
	drain:
		for {
			select {
			case j, ok := <-d.jobs:
				if !ok {
					break drain
				}
				batch = append(batch, j)
			default:
				break drain
			}
		}
		d.syncUpTo(batch[len(batch)-1].seq) // seqs only grow
		failErr := d.err()
		for _, j := range batch {
			for _, r := range j.reqs {
				if failErr != nil {
					r.err = failErr
				}
				close(r.done)
			}
		}
		clear(batch)
	}
}

// syncUpTo makes the WAL durable up to seq, or records the failure.
func (d *durability) syncUpTo(seq uint64) {
	if d.err() != nil || d.durableSeq.Load() >= seq {
		return
	}
	if err := d.syncWAL(); err != nil {
		d.fail(err)
		return
	}
	d.syncs.Add(1)
	d.durableSeq.Store(seq)
	d.wake()
}

// syncNow syncs the WAL outside the pipeline, whatever was committed: Open
// uses it before the syncer runs, for what it wrote on the writer
// connection itself (migrations) and for a WAL left by a process that
// stopped before its last sync.
func (d *durability) syncNow() error {
	d.syncUpTo(d.beforeCommit())
	return d.err()
}

// fail records the first sync failure and wakes every waiter.
func (d *durability) fail(err error) {
	e := &trove.Error{Code: trove.EUNAVAILABLE,
		Message: "the database could not be made durable (sync of the write-ahead log failed); writes since the last sync may be lost: restart trove",
		Err:     err}
	if d.failed.CompareAndSwap(nil, e) {
		d.wake()
	}
}

// fdatasyncWAL flushes the WAL file's data to disk. The file is opened at
// the first sync (SQLite creates it) and again whenever the path no longer
// names the file held open; the directory is synced once per file, so that
// a newly created WAL's directory entry is durable too (SQLite itself would
// do so at its first sync, which with synchronous=NORMAL comes only at a
// checkpoint).
func (d *durability) fdatasyncWAL() error {
	if err := d.openWAL(); err != nil {
		return err
	}
	if err := fdatasync(d.wal); err != nil {
		return fmt.Errorf("fdatasync %s: %w", d.walPath, err)
	}
	if !d.dirSynced {
		dir, err := os.Open(filepath.Dir(d.walPath))
		if err != nil {
			return err
		}
		err = dir.Sync()
		dir.Close()
		if err != nil {
			return fmt.Errorf("fsync %s: %w", filepath.Dir(d.walPath), err)
		}
		d.dirSynced = true
	}
	return nil
}

// openWAL opens the WAL, or reopens it when the path now names another
// file.
func (d *durability) openWAL() error {
	if d.wal != nil {
		held, err1 := d.wal.Stat()
		named, err2 := os.Stat(d.walPath)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			return nil
		}
		d.closeWAL()
	}
	f, err := os.OpenFile(d.walPath, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open the write-ahead log: %w", err)
	}
	d.wal, d.dirSynced = f, false
	return nil
}

func (d *durability) closeWAL() {
	if d.wal != nil {
		d.wal.Close()
		d.wal = nil
	}
}
