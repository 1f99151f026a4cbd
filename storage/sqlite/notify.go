package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/trovehq/trove/storage"
)

var _ storage.EventNotifier = (*DB)(nil)

// DefaultNotifyPoll is how often, by default, a DB with NotifyEvents
// callbacks asks SQLite whether another connection (another process on
// the same file, another Open of it) committed: the bound on how late
// such a commit is heard of.
const DefaultNotifyPoll = time.Second

// notifier delivers NotifyEvents' callbacks. Commits made through this DB
// name the sessions they changed: EventInsert, SessionEnd, SessionUpdate
// and SessionDelete record the session in the group's touched set, and the
// committer calls back with each after the group's commit. Commits made by
// any other connection are found by PRAGMA data_version on the writer
// connection, which changes exactly when another connection committed; the
// callbacks then get "" (any session may have changed). The check is one
// statement on the committer every poll, whatever the number of waiters.
type notifier struct {
	mu      sync.Mutex
	fns     []func(sessionID string)
	started bool
	quit    chan struct{} // closed by Close
	done    chan struct{} // closed when the poller has exited

	// Committer only.
	touched     map[string]struct{}
	dataVersion int64
	haveVersion bool
}

// NotifyEvents registers fn (storage.EventNotifier): it is called with a
// session's ID after this DB commits events to its transcript or changes
// its row, and with "" within the notify poll (Options.NotifyPoll) after
// another connection to the file committed anything. The first call starts
// the poller; Close stops it.
func (db *DB) NotifyEvents(fn func(sessionID string)) {
	n := &db.notify
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fns = append(n.fns, fn)
	if n.started {
		return
	}
	n.started = true
	go db.pollOthers(n.quit, n.done)
}

// callbacks returns the registered callbacks (nil when there are none).
func (n *notifier) callbacks() []func(string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fns
}

// touchSession records, in a Write, that the current group changed the
// session's transcript or row.
func (t *tx) touchSession(id string) {
	if t.touched != nil {
		t.touched[id] = struct{}{}
	}
}

// deliverTouched calls back with each session the group just committed
// touched (committer only). A group that failed calls back all the same:
// a callback that changes nothing is allowed.
func (db *DB) deliverTouched() {
	n := &db.notify
	if len(n.touched) == 0 {
		return
	}
	for _, fn := range n.callbacks() {
		for id := range n.touched {
			fn(id)
		}
	}
	clear(n.touched)
}

// pollOthers asks, every notify poll, whether another connection
// committed, until quit.
func (db *DB) pollOthers(quit, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(db.notifyPoll)
	defer t.Stop()
	check := func(ctx context.Context, c *sql.Conn) error {
		n := &db.notify
		var v int64
		if err := c.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
			return err
		}
		changed := n.haveVersion && v != n.dataVersion
		n.dataVersion, n.haveVersion = v, true
		if changed {
			for _, fn := range n.callbacks() {
				fn("")
			}
		}
		return nil
	}
	for {
		err := db.submit(context.Background(), &writeReq{ctx: context.Background(), raw: check})
		if err == errClosed {
			return
		}
		if err != nil {
			db.log.Warn("sqlite: checking for other connections' commits", "err", err)
			for _, fn := range db.notify.callbacks() {
				fn("")
			}
		}
		select {
		case <-quit:
			return
		case <-t.C:
		}
	}
}
