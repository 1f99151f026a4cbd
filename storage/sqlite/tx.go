package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// tx implements storage.Tx on one connection: a read connection inside
// BEGIN … ROLLBACK (Read) or with no transaction for its one statement
// (DB.MemoryGet), or the writer connection inside the group's transaction,
// possibly in a savepoint (Write).
type tx struct {
	q querier
	// stmts, when set, caches prepared statements on the connection q
	// runs on; nil means statements are prepared per call.
	stmts *stmtCache
	// ctxOf derives the context statements run with. Writes share one
	// transaction, so their statements must not be interrupted by one
	// caller's cancellation (SQLite may then roll back the whole
	// transaction): Write uses context.WithoutCancel.
	ctxOf func(context.Context) context.Context
	ended atomic.Bool
	// stores, set in Writes only, is the committer's cache of the stores
	// StoreLock read in the current group; nil in Reads.
	stores *storeCache
	// touched, set in Writes only, collects the sessions the current
	// group changed, for NotifyEvents (notify.go); nil in Reads.
	touched map[string]struct{}
	// searchFresh is set in ReadSearch's transactions, whose snapshot has
	// the search index in step with the memory rows (searchindex.go).
	searchFresh bool
}

var _ storage.Tx = (*tx)(nil)

// errTxEnded is returned by a Tx method called after fn returned.
var errTxEnded = errors.New("sqlite: Tx used after its Read or Write function returned")

func (t *tx) end() { t.ended.Store(true) }

// check refuses calls after the transaction ended or once ctx is done (the
// statement has not started, so only this caller is affected).
func (t *tx) check(ctx context.Context) error {
	if t.ended.Load() {
		return errTxEnded
	}
	if err := ctx.Err(); err != nil {
		return ctxError(err)
	}
	return nil
}

// exec runs a statement that changes rows. The store cache hears of it
// before it runs (see storeCache).
func (t *tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	t.stores.statement(query)
	var res sql.Result
	st, err := t.stmts.get(query)
	switch {
	case err != nil:
	case st != nil:
		res, err = st.ExecContext(t.ctxOf(ctx), args...)
	default:
		res, err = t.q.ExecContext(t.ctxOf(ctx), query, args...)
	}
	if err != nil {
		return nil, translate(err)
	}
	return res, nil
}

// execOne runs a statement that must change exactly one row, ENOTFOUND
// (with msg) otherwise.
func (t *tx) execOne(ctx context.Context, what, id, query string, args ...any) error {
	res, err := t.exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return translate(err)
	}
	if n == 0 {
		return notFound(what, id)
	}
	return nil
}

func (t *tx) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	st, err := t.stmts.get(query)
	switch {
	case err != nil:
	case st != nil:
		rows, err = st.QueryContext(t.ctxOf(ctx), args...)
	default:
		rows, err = t.q.QueryContext(t.ctxOf(ctx), query, args...)
	}
	if err != nil {
		return nil, translate(err)
	}
	return rows, nil
}

// queryRow runs a query whose single row scan fills; ENOTFOUND (naming what
// and id) when there is no row.
func (t *tx) queryRow(ctx context.Context, what, id string, scan func(rowScanner) error, query string, args ...any) error {
	if err := t.check(ctx); err != nil {
		return err
	}
	st, err := t.stmts.get(query)
	switch {
	case err != nil:
	case st != nil:
		err = scan(st.QueryRowContext(t.ctxOf(ctx), args...))
	default:
		err = scan(t.q.QueryRowContext(t.ctxOf(ctx), query, args...))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(what, id)
	}
	return translate(err)
}

type rowScanner interface{ Scan(dest ...any) error }

// stmtCache keeps the statements prepared on one connection, by text.
// The set of texts the driver uses is small and bounded (lists take LIMIT
// as a parameter); past maxCachedStmts statements are not cached.
type stmtCache struct {
	mu   sync.Mutex
	m    map[string]*sql.Stmt
	prep func(query string) (*sql.Stmt, error)
}

const maxCachedStmts = 1024

func newStmtCache(prep func(query string) (*sql.Stmt, error)) *stmtCache {
	return &stmtCache{m: map[string]*sql.Stmt{}, prep: prep}
}

// get returns the cached statement for query, preparing it on a miss; nil
// (and no error) for a nil cache or a full one.
func (c *stmtCache) get(query string) (*sql.Stmt, error) {
	if c == nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	if len(c.m) >= maxCachedStmts {
		return nil, nil
	}
	st, err := c.prep(query)
	if err != nil {
		return nil, err
	}
	c.m[query] = st
	return st, nil
}

// close closes every cached statement.
func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for q, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, q)
	}
	return errors.Join(errs...)
}

// ---- conversions ----

// micros is t as integer microseconds since the epoch (floor).
func micros(t time.Time) int64 { return t.UnixMicro() }

// ceilMicros is the smallest microsecond count not before t.
func ceilMicros(t time.Time) int64 {
	us := t.UnixMicro()
	if time.UnixMicro(us).Before(t) {
		us++
	}
	return us
}

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func nullMicros(t *time.Time) any {
	if t == nil {
		return nil
	}
	return micros(*t)
}

func timePtr(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// actorCols returns the (type, id) columns of a, both NULL for nil.
func actorCols(a *trove.Actor) (typ, id any, err error) {
	if a == nil {
		return nil, nil, nil
	}
	s, err := actorID(*a)
	if err != nil {
		return nil, nil, err
	}
	return string(a.Type), s, nil
}

// actorID returns the ID field of a that matches its type.
func actorID(a trove.Actor) (string, error) {
	if id, ok := a.ID(); ok || a.Type == "" {
		return id, nil
	}
	return "", trove.Errorf(trove.EINVALID, "unknown actor type %q", a.Type)
}

// actorOf rebuilds an actor from its columns; nil when typ is NULL.
func actorOf(typ, id sql.NullString) *trove.Actor {
	if !typ.Valid {
		return nil
	}
	a := trove.NewActor(trove.ActorType(typ.String), id.String)
	return &a
}

// beforeKey turns a keyset position into the (created_at, id) bound of a
// strictly-less row-value comparison against stored microseconds. A
// position with a sub-microsecond part is rounded so that the comparison
// stays exact: every stored row at or below floor(t) precedes it.
func beforeKey(p *storage.Position) (int64, string) {
	us := p.CreatedAt.UnixMicro()
	if time.UnixMicro(us).Before(p.CreatedAt) {
		return us + 1, ""
	}
	return us, p.ID
}

// whereBuilder accumulates AND-ed conditions and their arguments.
type whereBuilder struct {
	conds []string
	args  []any
}

func (w *whereBuilder) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *whereBuilder) timeRange(col string, r trove.TimeRange) {
	if r.GTE != nil {
		w.add(col+" >= ?", ceilMicros(*r.GTE))
	}
	if r.LTE != nil {
		w.add(col+" <= ?", micros(*r.LTE))
	}
}

func (w *whereBuilder) before(p *storage.Position) {
	if p != nil {
		us, id := beforeKey(p)
		w.add("(created_at, id) < (?, ?)", us, id)
	}
}

func (w *whereBuilder) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// limitArg is the argument of a "LIMIT ?" clause: n, or -1 (no limit) for
// n <= 0. A parameter rather than a literal keeps the set of statement texts,
// and so the statement cache, small.
func limitArg(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
