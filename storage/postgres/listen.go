package postgres

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
)

// notifyChannel is the LISTEN/NOTIFY channel VersionInsert notifies in the
// inserting transaction, with the payload "<schema> <store ID>", so that
// every node learns at commit which stores' histories grew.
const notifyChannel = "trove_versions"

// relistenDelay is how long the listener waits before reconnecting after
// its connection failed.
const relistenDelay = time.Second

// listener is the one dedicated connection per DB that LISTENs on
// notifyChannel once NotifyVersions is called.
type listener struct {
	mu     sync.Mutex
	fns    []func(storeID string)
	efns   []func(sessionID string) // NotifyEvents'; payloads naming a session
	cancel context.CancelFunc       // nil until started
	done   chan struct{}
}

// NotifyVersions registers fn (storage.VersionNotifier): it is called with
// a store's ID after any process or node commits versions to that store in
// this database and schema, and with "" after the listening connection was
// lost and re-established (notifications may have been missed meanwhile).
// The first call starts a dedicated connection (not one of the pool's);
// Close stops it.
func (db *DB) NotifyVersions(fn func(storeID string)) {
	l := &db.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fns = append(l.fns, fn)
	db.startListening()
}

// NotifyEvents registers fn (storage.EventNotifier): it is called with a
// session's ID after any process or node commits events to its transcript
// or changes its row (EventInsert, SessionUpdate and SessionDelete notify
// the same channel as VersionInsert, with a session ID as payload), and
// with "" after the listening connection was lost and re-established.
func (db *DB) NotifyEvents(fn func(sessionID string)) {
	l := &db.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	l.efns = append(l.efns, fn)
	db.startListening()
}

// startListening starts the listener once; l.mu is held.
func (db *DB) startListening() {
	l := &db.listen
	if l.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		db.listenLoop(ctx)
	}()
}

// stopListening ends the listener, if started, and waits for it.
func (db *DB) stopListening() {
	l := &db.listen
	l.mu.Lock()
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// deliver calls the functions registered for id's kind: NotifyEvents' for
// a session ID, NotifyVersions' for a store ID, every one for "".
func (l *listener) deliver(id string) {
	l.mu.Lock()
	fns, efns := l.fns, l.efns
	l.mu.Unlock()
	session := strings.HasPrefix(id, trove.PrefixSession)
	if id == "" || !session {
		for _, fn := range fns {
			fn(id)
		}
	}
	if id == "" || session {
		for _, fn := range efns {
			fn(id)
		}
	}
}

// listenLoop keeps a LISTENing connection until ctx ends, reconnecting
// after relistenDelay when it fails.
func (db *DB) listenLoop(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		err := db.listenOnce(ctx, first)
		first = false
		if ctx.Err() != nil {
			return
		}
		_ = err // the connection failed: anything may have been missed
		db.listen.deliver("")
		t := time.NewTimer(relistenDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce connects, LISTENs and delivers notifications of this DB's
// schema until the connection fails or ctx ends.
func (db *DB) listenOnce(ctx context.Context, first bool) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if !first {
		// Commits between the lost connection and this LISTEN were not
		// heard.
		db.listen.deliver("")
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		sch, storeID, ok := strings.Cut(n.Payload, " ")
		if ok && sch == schema {
			db.listen.deliver(storeID)
		}
	}
}
