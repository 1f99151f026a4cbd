package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// tx implements storage.Tx over one pgx transaction. Every method returns
// translated errors. After a method returns a database error (not ENOTFOUND)
// the PostgreSQL transaction is aborted, so fn should return that error.
type tx struct {
	conn        *pgx.Conn
	beginSQL    string // BEGIN with the isolation level and access mode
	sent        bool   // BEGIN was sent
	beginFailed bool   // BEGIN failed: nothing ran
	// rollbackTimeout bounds ROLLBACK, which runs even when the caller's
	// context is done.
	rollbackTimeout time.Duration
	// settle, for a write, is how long after COMMIT is sent the server has
	// certainly committed or ended the transaction (DB.settle); 0 for a
	// read, or when the server has no idle-in-transaction timeout.
	settle time.Duration
}

var _ storage.Tx = (*tx)(nil)

type scanner interface{ Scan(dest ...any) error }

func notFound(what string) error {
	return &trove.Error{Code: trove.ENOTFOUND, Message: what + " not found"}
}

// utc returns t in UTC; pgx returns timestamptz in the local zone.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// ---- actors ----

func actorID(a *trove.Actor) string {
	if id, ok := a.ID(); ok {
		return id
	}
	for _, id := range []string{a.APIKeyID, a.SessionID, a.UserID, a.ServiceAccountID} {
		if id != "" {
			return id
		}
	}
	return ""
}

// actorCols returns the (type, id) columns of a, both nil for a nil actor.
func actorCols(a *trove.Actor) (typ, id *string) {
	if a == nil {
		return nil, nil
	}
	t, i := string(a.Type), actorID(a)
	return &t, &i
}

func actorFrom(typ, id *string) *trove.Actor {
	if typ == nil {
		return nil
	}
	var i string
	if id != nil {
		i = *id
	}
	a := trove.NewActor(trove.ActorType(*typ), i)
	return &a
}

// ---- time bounds ----

// ceilMicro and floorMicro turn an inclusive bound with nanoseconds into the
// equivalent bound on PostgreSQL's microsecond timestamps.
func ceilMicro(t time.Time) time.Time {
	if r := t.Truncate(time.Microsecond); !r.Equal(t) {
		return r.Add(time.Microsecond)
	}
	return t
}

func floorMicro(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// where accumulates SQL conditions and their arguments.
type where struct {
	conds []string
	args  []any
}

// add appends a condition whose "?" placeholders are numbered in order.
func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", fmt.Sprintf("$%d", len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

func (w *where) sql() string { return strings.Join(w.conds, " AND ") }

func (w *where) timeRange(col string, r trove.TimeRange) {
	if r.GTE != nil {
		w.add(col+" >= ?", ceilMicro(*r.GTE))
	}
	if r.LTE != nil {
		w.add(col+" <= ?", floorMicro(*r.LTE))
	}
}

func (w *where) before(p *storage.Position) {
	if p != nil {
		w.add("(created_at, id) < (?, ?)", p.CreatedAt, p.ID)
	}
}

func (w *where) limit(n int) string {
	if n <= 0 {
		return ""
	}
	w.args = append(w.args, n)
	return fmt.Sprintf(" LIMIT $%d", len(w.args))
}
