package postgres

import (
	"context"
	"errors"
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
// schema until the connection fails or ctx ends. Every statement is
// bounded by the connect timeout, and a connection that brought nothing for
// listenCheck is pinged, so a connection gone silent is noticed within
// about listenCheck plus the connect timeout rather than never.
func (db *DB) listenOnce(ctx context.Context, first bool) error {
	conn, err := pgx.ConnectConfig(ctx, db.pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	bounded := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, db.acquireTimeout) }
	bctx, cancel := bounded()
	defer cancel()
	if _, err := conn.Exec(bctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	var schema string
	if err := conn.QueryRow(bctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if !first {
		// Commits between the lost connection and this LISTEN were not
		// heard.
		db.listen.deliver("")
	}
	for {
		wctx, wcancel := context.WithTimeout(ctx, db.listenCheck())
		n, err := conn.WaitForNotification(wctx)
		wcancel()
		if err != nil {
			if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) || conn.IsClosed() {
				return err
			}
			// Quiet for listenCheck: make sure the connection still answers.
			pctx, pcancel := bounded()
			err = conn.Ping(pctx)
			pcancel()
			if err != nil {
				return err
			}
			continue
		}
		sch, storeID, ok := strings.Cut(n.Payload, " ")
		if ok && sch == schema {
			db.listen.deliver(storeID)
		}
	}
}

// listenCheck is how long the listener waits for a notification before it
// pings its connection: half the TCP timeout, at least a second, at most
// ten.
func (db *DB) listenCheck() time.Duration {
	if db.tcpTimeout <= 0 {
		return 10 * time.Second
	}
	return min(10*time.Second, max(time.Second, db.tcpTimeout/2))
}
