package console

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/internal/textdiff"
)

// The time machine pages: a store as of a moment, the difference between
// two moments, fork, rollback of one actor's writes and audit of the hash
// chain, through trove.HistoryService (present when the console's
// Services implement it).

// asOfPageSize is how many memories one as-of page lists.
const asOfPageSize = 100

// parseAt reads a moment as typed in a console form, as
// trove.ParseMoment reads it at now: durations ago ("2h") count from the
// server's clock, and a date or a date and time without an offset (a
// browser's datetime-local value, "2026-01-02T15:04") is taken as UTC,
// since the server does not know the browser's zone (the forms say so; an
// offset, "2026-01-02T15:04+01:00", is honoured).
func parseAt(s string, now time.Time) (trove.Moment, error) {
	return trove.ParseMoment(s, now, time.UTC)
}

// momentLabel describes a moment for a heading.
func momentLabel(m trove.Moment, seq int64) string {
	switch {
	case m.IsZero():
		return "now (version " + strconv.FormatInt(seq, 10) + ")"
	case m.Time != nil:
		return m.Time.UTC().Format("2006-01-02 15:04:05 UTC") + " (version " + strconv.FormatInt(seq, 10) + ")"
	}
	return "version " + strconv.FormatInt(seq, 10)
}

type asOfData struct {
	Store *trove.Store
	At    string // the moment as given, for links
	Label string
	Seq   int64
	Dir   string
	Items []trove.MemoryVersion
	Next  string
}

// asOfPage lists the store as it was at ?at=, below ?dir=, read-only.
func (h *Handler) asOfPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	q := query(r)
	at, err := parseAt(q.Get("at"), h.now())
	if err != nil {
		return err
	}
	dir := q.Get("dir")
	if dir != "" && !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	pg, err := h.hist.ListMemoriesAsOf(ctx, st.ID, at, trove.ListMemoriesParams{PathPrefix: dir, Limit: asOfPageSize, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	d := asOfData{Store: st, At: at.String(), Label: momentLabel(at, pg.Seq), Seq: pg.Seq, Dir: dir, Items: pg.Data, Next: pg.NextPage}
	if d.At == "" {
		d.At = strconv.FormatInt(pg.Seq, 10)
	}
	h.render(w, r, http.StatusOK, "asof", s, &view{Title: st.Name + " as of " + d.Label, Data: d})
	return nil
}

type asOfMemoryData struct {
	Store   *trove.Store
	At      string
	Label   string
	Version *trove.MemoryVersion
}

// asOfMemoryPage shows one memory as it was at ?at=.
func (h *Handler) asOfMemoryPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	at, err := parseAt(query(r).Get("at"), h.now())
	if err != nil {
		return err
	}
	v, err := h.hist.GetMemoryAsOf(ctx, st.ID, at, r.PathValue("mid"), trove.ViewFull)
	if err != nil {
		return err
	}
	label := at.String()
	if label == "" {
		label = "now"
	}
	h.render(w, r, http.StatusOK, "asofmemory", s, &view{Title: "As of " + label, Data: asOfMemoryData{Store: st, At: at.String(), Label: label, Version: v}})
	return nil
}

type changeRow struct {
	trove.MemoryDiff
	Lines []textdiff.Line
}

type changesData struct {
	Store    *trove.Store
	From, To string
	Diff     *trove.StoreDiff
	Changes  []changeRow
	Next     string // the URL of the next page, without its cursor; "" on the last
}

// changesPage shows what changed in a store between ?from= and ?to=.
func (h *Handler) changesPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	q := query(r)
	if strings.TrimSpace(q.Get("from")) == "" {
		return trove.Errorf(trove.EINVALID, "choose the moment to compare from (a time, a version number or a version ID)")
	}
	from, err := parseAt(q.Get("from"), h.now())
	if err != nil {
		return err
	}
	to, err := parseAt(q.Get("to"), h.now())
	if err != nil {
		return err
	}
	// One page of the diff (bounded, trove.StoreDiff); "Next" continues
	// it with the moments pinned in the cursor.
	diff, err := h.hist.DiffStorePage(ctx, st.ID, trove.DiffParams{From: from, To: to, Cursor: q.Get("cursor")})
	if err != nil {
		return err
	}
	d := changesData{Store: st, From: q.Get("from"), To: q.Get("to"), Diff: diff}
	if diff.NextPage != "" {
		d.Next = storeURL(st.ID) + "/changes?" + url.Values{"from": {q.Get("from")}, "to": {q.Get("to")}}.Encode()
	}
	for _, c := range diff.Changes {
		d.Changes = append(d.Changes, changeRow{MemoryDiff: c, Lines: textdiff.Split(c.Patch)})
	}
	h.render(w, r, http.StatusOK, "changes", s, &view{Title: "Changes in " + st.Name, Data: d})
	return nil
}

// forkStore creates a store from this one as of a moment and opens it.
func (h *Handler) forkStore(w http.ResponseWriter, r *http.Request, s *signed) error {
	at, err := parseAt(r.PostFormValue("at"), h.now())
	if err != nil {
		return err
	}
	if r.PostFormValue("allow_duplicate") != "yes" {
		if err := trove.CheckStoreNameFree(r.Context(), h.svc, r.PostFormValue("name")); err != nil {
			if trove.IsStoreNameTaken(err) {
				return trove.Errorf(trove.ECONFLICT, "%s, or tick “allow a duplicate name” in the fork form", trove.ErrorMessage(err))
			}
			return err
		}
	}
	res, err := h.hist.ForkStore(r.Context(), r.PathValue("sid"), trove.ForkStoreParams{
		Name: r.PostFormValue("name"), Description: r.PostFormValue("description"), AsOf: at,
	})
	if err != nil {
		return err
	}
	redirect(w, r, storeURL(res.Store.ID), "forked")
	return nil
}

type rollbackData struct {
	Store  *trove.Store
	Actor  string // sesn_… or apikey_…
	Since  string
	Result *trove.RollbackResult
	Force  bool
	Paged  bool   // a later page of the preview
	Next   string // the preview's next page ("" when none)
	// Back is what the preview's changes bring back, by memory ID (the
	// first rollbackPreviewMax changes); Unshown counts the changes left
	// without it.
	Back    map[string]*rollbackBack
	Unshown int
}

// rollbackPreviewMax is how many changes of a rollback preview show the
// content they bring back (up to two version reads each); the others link
// to their versions.
const rollbackPreviewMax = 25

// rollbackBack is the content a change of a rollback brings back
// (Content, the target version's) and, for a revert, its difference from
// the memory's current content (Diff; nil when they are equal).
type rollbackBack struct {
	Content string
	Diff    []textdiff.Line
}

// rollbackBacks reads what the changes of a preview bring back: the target
// version of each revert and restore (not of a redacted one), and the
// current version of a revert for the difference.
func (h *Handler) rollbackBacks(ctx context.Context, storeID string, d *rollbackData) error {
	d.Back = map[string]*rollbackBack{}
	n := 0
	for _, c := range d.Result.Changes {
		if c.Target == nil || c.Target.Path == nil || c.Target.SHA256 == nil {
			continue
		}
		if n == rollbackPreviewMax {
			d.Unshown++
			continue
		}
		n++
		tv, err := h.svc.GetVersion(ctx, storeID, c.Target.ID, trove.ViewFull)
		if err != nil {
			return err
		}
		if tv.Content == nil {
			continue
		}
		b := &rollbackBack{Content: *tv.Content}
		if c.Current != nil && c.Current.Path != nil && c.Current.SHA256 != nil && *c.Current.SHA256 != *tv.SHA256 {
			cv, err := h.svc.GetVersion(ctx, storeID, c.Current.ID, trove.ViewFull)
			if err != nil {
				return err
			}
			if cv.Content != nil {
				b.Diff = textdiff.Lines(*cv.Path+" (now)", *tv.Path+" (back to)", *cv.Content, *tv.Content)
			}
		}
		d.Back[c.MemoryID] = b
	}
	return nil
}

// rollbackPageSize is how many changes and conflicts a rollback page
// lists (the totals are whole).
const rollbackPageSize = trove.DefaultRollbackPageSize

// rollbackParams reads the actor and moment of a rollback form.
func rollbackParams(actor, since string, now time.Time) (trove.RollbackParams, error) {
	var p trove.RollbackParams
	actor = strings.TrimSpace(actor)
	switch {
	case strings.HasPrefix(actor, trove.PrefixSession):
		p.SessionID = actor
	case strings.HasPrefix(actor, trove.PrefixAPIKey):
		p.APIKeyID = actor
	default:
		return p, trove.Errorf(trove.EINVALID, "name whose writes to roll back: a session ID (sesn_…) or an API key ID (apikey_…)")
	}
	if strings.TrimSpace(since) == "" {
		return p, trove.Errorf(trove.EINVALID, "choose the moment to roll back to (a time, a version number or a version ID)")
	}
	m, err := parseAt(since, now)
	if err != nil {
		return p, err
	}
	p.Since = m
	return p, nil
}

// rollbackPage is the dry run: the change set and the conflicts, with the
// form that applies it.
func (h *Handler) rollbackPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	q := query(r)
	p, err := rollbackParams(q.Get("actor"), q.Get("since"), h.now())
	if err != nil {
		return err
	}
	p.DryRun, p.Limit, p.Cursor = true, rollbackPageSize, q.Get("page")
	res, err := h.hist.RollbackActor(ctx, st.ID, p)
	if err != nil {
		return err
	}
	// The apply form carries the moment resolved (a time in UTC, not
	// "2h", which would move between the preview and the click).
	since := p.Since.String()
	if since == "" {
		since = q.Get("since")
	}
	d := rollbackData{Store: st, Actor: q.Get("actor"), Since: since, Result: res, Paged: p.Cursor != ""}
	if res.NextPage != "" {
		d.Next = storeURL(st.ID) + "/rollback?" + url.Values{"actor": {d.Actor}, "since": {d.Since}, "page": {res.NextPage}}.Encode()
	}
	if err := h.rollbackBacks(ctx, st.ID, &d); err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "rollback", s, &view{Title: "Roll back", Data: d})
	return nil
}

// applyRollback applies the change set; with conflicts and no force core
// applies nothing and returns the change set with Applied false, shown
// again with the refusal.
func (h *Handler) applyRollback(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	actor, since := r.PostFormValue("actor"), r.PostFormValue("since")
	p, err := rollbackParams(actor, since, h.now())
	if err != nil {
		return err
	}
	p.Force, p.Limit = r.PostFormValue("force") == "yes", rollbackPageSize
	d := rollbackData{Store: st, Actor: actor, Since: since, Force: p.Force}
	res, err := h.hist.RollbackActor(ctx, st.ID, p)
	if err != nil {
		return err
	}
	d.Result = res
	if !res.Applied {
		// Conflicts without force refuse the whole change set (core
		// reports it as a result with Applied false).
		if res.NextPage != "" {
			d.Next = storeURL(st.ID) + "/rollback?" + url.Values{"actor": {actor}, "since": {since}, "page": {res.NextPage}}.Encode()
		}
		msg := "Nothing was rolled back: " + strconv.Itoa(res.ConflictsTotal) + " memories conflict. Tick “roll back the rest anyway” to leave them as they are and roll back the others."
		if res.ChangesTotal == 0 {
			msg = "Nothing was rolled back: there is nothing to roll back."
		}
		if err := h.rollbackBacks(ctx, st.ID, &d); err != nil {
			return err
		}
		h.render(w, r, http.StatusConflict, "rollback", s, &view{Title: "Roll back", Error: msg, Data: d})
		return nil
	}
	h.render(w, r, http.StatusOK, "rollback", s, &view{Title: "Rolled back", Notice: "Rolled back: " + strconv.Itoa(res.ChangesTotal) + " memories changed as new versions.", Data: d})
	return nil
}

type auditData struct {
	Store  *trove.Store
	Report *trove.AuditReport
}

// auditPage recomputes the store's hash chain and shows the result.
func (h *Handler) auditPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	ctx := r.Context()
	st, err := h.svc.GetStore(ctx, r.PathValue("sid"))
	if err != nil {
		return err
	}
	rep, err := h.hist.VerifyStore(ctx, st.ID)
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "audit", s, &view{Title: "Audit of " + st.Name, Data: auditData{Store: st, Report: rep}})
	return nil
}

// asOfURL is a store's listing as of a moment, below dir.
func asOfURL(sid, at, dir, cursor string) string {
	q := url.Values{"at": {at}}
	if dir != "" && dir != "/" {
		q.Set("dir", dir)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return storeURL(sid) + "/asof?" + q.Encode()
}
