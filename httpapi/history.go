package httpapi

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/trovehq/trove"
)

// The time machine (trove.HistoryService), a Trove extension. Moments
// ("at", "from", "to", "as_of", "since") are strings as trove.ParseExactMoment
// reads them: "" or "now", a version ID (memver_…), a version number (seq),
// or an RFC 3339 time.
//
//	GET  /trove/v1/memory_stores/{id}/as_of/memories?at=&path_prefix=&limit=&page=&view=
//	     → {"seq": n, "data": [version, …], "next_page": …}
//	GET  /trove/v1/memory_stores/{id}/as_of/memory?at=&ref=(mem_… or /path)&view=
//	     → version
//	GET  /trove/v1/memory_stores/{id}/diff?from=&to=
//	     → {"from_seq", "to_seq", "changes": [{"kind", "memory_id", "from", "to", "content_changed", "redacted", "patch"}]}
//	POST /trove/v1/memory_stores/{id}/fork {"name", "description", "metadata", "as_of"}
//	     → {"memory_store", "seq", "copied", "skipped"}
//	POST /trove/v1/memory_stores/{id}/rollback {"session_id" | "api_key_id", "since", "dry_run", "force", "limit", "page"}
//	     → {"since_seq", "changes", "conflicts", "changes_total", "conflicts_total", "next_page", "applied"}
//	     (at most limit changes and limit conflicts listed, 100 by default, 1,000 at most;
//	     next_page continues a dry run: send it as "page" with dry_run true)
//	GET  /trove/v1/memory_stores/{id}/memory_versions?(the /v1 listing's query)
//	     → {"data": [version, …], "next_page": …}
//	GET  /trove/v1/memory_stores/{id}/audit/verify
//	     → {"memory_store_id", "head_seq", "head", "verified", "unchained", "redacted", "gaps", "gaps_total", "ok", "break", "verified_at"}
//
// A version here is the /v1 memory_version object plus "seq", "leaf_hash",
// "chain_hash" (lowercase hex, null before the chain existed) and "origin"
// ({"memory_store_id", "memory_version_id"} of a forked memory's source,
// else null).

const historyBase = "/trove/v1/memory_stores/{memory_store_id}"

type wireOrigin struct {
	MemoryStoreID   string `json:"memory_store_id"`
	MemoryVersionID string `json:"memory_version_id"`
}

type wireHistVersion struct {
	wireVersion
	Seq       int64       `json:"seq"`
	LeafHash  *string     `json:"leaf_hash"`
	ChainHash *string     `json:"chain_hash"`
	Origin    *wireOrigin `json:"origin"`
}

type wireAsOfPage struct {
	Seq      int64             `json:"seq"`
	Data     []wireHistVersion `json:"data"`
	NextPage *string           `json:"next_page"`
}

type wireMemoryDiff struct {
	Kind           string           `json:"kind"`
	MemoryID       string           `json:"memory_id"`
	From           *wireHistVersion `json:"from"`
	To             *wireHistVersion `json:"to"`
	ContentChanged bool             `json:"content_changed"`
	Redacted       bool             `json:"redacted"`
	Patch          string           `json:"patch"`
}

type wireStoreDiff struct {
	FromSeq  int64            `json:"from_seq"`
	ToSeq    int64            `json:"to_seq"`
	Changes  []wireMemoryDiff `json:"changes"`
	NextPage *string          `json:"next_page"`
}

type wireForkRequest struct {
	Name        *string           `json:"name"`
	Description *string           `json:"description,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	AsOf        *string           `json:"as_of,omitempty"`
}

type wireForkResult struct {
	MemoryStore wireStore `json:"memory_store"`
	Seq         int64     `json:"seq"`
	Copied      int       `json:"copied"`
	Skipped     []string  `json:"skipped"`
}

type wireRollbackRequest struct {
	SessionID *string `json:"session_id,omitempty"`
	APIKeyID  *string `json:"api_key_id,omitempty"`
	Since     *string `json:"since"`
	DryRun    *bool   `json:"dry_run,omitempty"`
	Force     *bool   `json:"force,omitempty"`
	Limit     *int    `json:"limit,omitempty"`
	Page      *string `json:"page,omitempty"`
}

type wireRollbackChange struct {
	Action   string           `json:"action"`
	MemoryID string           `json:"memory_id"`
	Current  *wireHistVersion `json:"current"`
	Target   *wireHistVersion `json:"target"`
}

type wireRollbackConflict struct {
	MemoryID string           `json:"memory_id"`
	Path     string           `json:"path"`
	Version  *wireHistVersion `json:"version"`
	Reason   string           `json:"reason"`
}

type wireRollbackResult struct {
	SinceSeq       int64                  `json:"since_seq"`
	Changes        []wireRollbackChange   `json:"changes"`
	Conflicts      []wireRollbackConflict `json:"conflicts"`
	ChangesTotal   int                    `json:"changes_total"`
	ConflictsTotal int                    `json:"conflicts_total"`
	NextPage       *string                `json:"next_page"`
	Applied        bool                   `json:"applied"`
}

type wireAuditBreak struct {
	MemoryVersionID string `json:"memory_version_id"`
	Seq             int64  `json:"seq"`
	Problem         string `json:"problem"`
}

type wireAuditReport struct {
	MemoryStoreID string          `json:"memory_store_id"`
	HeadSeq       int64           `json:"head_seq"`
	Head          string          `json:"head"`
	Verified      int             `json:"verified"`
	Unchained     int             `json:"unchained"`
	Redacted      int             `json:"redacted"`
	Gaps          [][2]int64      `json:"gaps"`
	GapsTotal     int             `json:"gaps_total"`
	OK            bool            `json:"ok"`
	Break         *wireAuditBreak `json:"break"`
	VerifiedAt    string          `json:"verified_at"`
}

func hexPtr(b []byte) *string {
	if b == nil {
		return nil
	}
	s := hex.EncodeToString(b)
	return &s
}

func histVersionToWire(v *trove.MemoryVersion) *wireHistVersion {
	if v == nil {
		return nil
	}
	out := &wireHistVersion{wireVersion: versionToWire(v), Seq: v.Seq, LeafHash: hexPtr(v.LeafHash), ChainHash: hexPtr(v.ChainHash)}
	if v.Origin != nil {
		out.Origin = &wireOrigin{MemoryStoreID: v.Origin.StoreID, MemoryVersionID: v.Origin.VersionID}
	}
	return out
}

func asOfPageToWire(p *trove.AsOfPage) wireAsOfPage {
	out := wireAsOfPage{Seq: p.Seq, Data: make([]wireHistVersion, len(p.Data)), NextPage: nextPage(p.NextPage)}
	for i := range p.Data {
		out.Data[i] = *histVersionToWire(&p.Data[i])
	}
	return out
}

func storeDiffToWire(d *trove.StoreDiff) wireStoreDiff {
	out := wireStoreDiff{FromSeq: d.FromSeq, ToSeq: d.ToSeq, Changes: make([]wireMemoryDiff, len(d.Changes)), NextPage: nextPage(d.NextPage)}
	for i, c := range d.Changes {
		out.Changes[i] = wireMemoryDiff{Kind: string(c.Kind), MemoryID: c.MemoryID, From: histVersionToWire(c.From), To: histVersionToWire(c.To),
			ContentChanged: c.ContentChanged, Redacted: c.Redacted, Patch: c.Patch}
	}
	return out
}

func forkResultToWire(r *trove.ForkResult) wireForkResult {
	skipped := r.Skipped
	if skipped == nil {
		skipped = []string{}
	}
	return wireForkResult{MemoryStore: storeToWire(r.Store), Seq: r.Seq, Copied: r.Copied, Skipped: skipped}
}

func rollbackResultToWire(r *trove.RollbackResult) wireRollbackResult {
	out := wireRollbackResult{SinceSeq: r.SinceSeq, Applied: r.Applied, ChangesTotal: r.ChangesTotal, ConflictsTotal: r.ConflictsTotal, NextPage: nextPage(r.NextPage),
		Changes: make([]wireRollbackChange, len(r.Changes)), Conflicts: make([]wireRollbackConflict, len(r.Conflicts))}
	for i, c := range r.Changes {
		out.Changes[i] = wireRollbackChange{Action: string(c.Action), MemoryID: c.MemoryID, Current: histVersionToWire(c.Current), Target: histVersionToWire(c.Target)}
	}
	for i, c := range r.Conflicts {
		out.Conflicts[i] = wireRollbackConflict{MemoryID: c.MemoryID, Path: c.Path, Version: histVersionToWire(c.Version), Reason: c.Reason}
	}
	return out
}

func auditReportToWire(r *trove.AuditReport) wireAuditReport {
	out := wireAuditReport{MemoryStoreID: r.StoreID, HeadSeq: r.HeadSeq, Head: r.Head, Verified: r.Verified, Unchained: r.Unchained,
		Redacted: r.Redacted, Gaps: r.Gaps, GapsTotal: r.GapsTotal, OK: r.OK, VerifiedAt: formatTime(r.VerifiedAt)}
	if out.Gaps == nil {
		out.Gaps = [][2]int64{}
	}
	if r.Break != nil {
		out.Break = &wireAuditBreak{MemoryVersionID: r.Break.VersionID, Seq: r.Break.Seq, Problem: r.Break.Problem}
	}
	return out
}

// Server side.

func (s *Server) addHistoryRoutes(h trove.HistoryService, add func(method, path string, kind routeKind, fn handlerFunc)) {
	add("GET", historyBase+"/as_of/memories", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		q := queryOf(w, r)
		at, err := trove.ParseExactMoment(q.Get("at"))
		if err != nil {
			return err
		}
		limit, err := queryLimit(q)
		if err != nil {
			return err
		}
		p, err := h.ListMemoriesAsOf(r.Context(), r.PathValue("memory_store_id"), at, trove.ListMemoriesParams{
			PathPrefix: q.Get("path_prefix"), Limit: limit, Cursor: q.Get("page"), View: trove.View(q.Get("view")),
		})
		if err != nil {
			return err
		}
		return s.ok(w, asOfPageToWire(p))
	})
	// The /v1 version listing with each version's seq (the moment the time
	// machine takes) and hashes, which the /v1 shape does not carry.
	add("GET", historyBase+"/memory_versions", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		page, err := s.listVersionsPage(w, r)
		if err != nil {
			return err
		}
		out := wirePage[*wireHistVersion]{Data: make([]*wireHistVersion, len(page.Data)), NextPage: nextPage(page.NextPage)}
		for i := range page.Data {
			out.Data[i] = histVersionToWire(&page.Data[i])
		}
		return s.ok(w, &out)
	})
	add("GET", historyBase+"/as_of/memory", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		q := queryOf(w, r)
		at, err := trove.ParseExactMoment(q.Get("at"))
		if err != nil {
			return err
		}
		v, err := h.GetMemoryAsOf(r.Context(), r.PathValue("memory_store_id"), at, q.Get("ref"), trove.View(q.Get("view")))
		if err != nil {
			return err
		}
		return s.ok(w, histVersionToWire(v))
	})
	add("GET", historyBase+"/diff", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		q := queryOf(w, r)
		from, err := trove.ParseExactMoment(q.Get("from"))
		if err != nil {
			return err
		}
		to, err := trove.ParseExactMoment(q.Get("to"))
		if err != nil {
			return err
		}
		limit, err := queryLimit(q)
		if err != nil {
			return err
		}
		d, err := h.DiffStorePage(r.Context(), r.PathValue("memory_store_id"), trove.DiffParams{From: from, To: to, Limit: limit, Cursor: q.Get("page")})
		if err != nil {
			return err
		}
		return s.ok(w, storeDiffToWire(d))
	})
	add("POST", historyBase+"/fork", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		var body wireForkRequest
		if err := s.decodeBody(w, r, &body, false); err != nil {
			return err
		}
		if body.Name == nil {
			return trove.Errorf(trove.EINVALID, "name is required")
		}
		p := trove.ForkStoreParams{Name: *body.Name, Metadata: body.Metadata}
		if body.Description != nil {
			p.Description = *body.Description
		}
		if body.AsOf != nil {
			at, err := trove.ParseExactMoment(*body.AsOf)
			if err != nil {
				return err
			}
			p.AsOf = at
		}
		res, err := h.ForkStore(r.Context(), r.PathValue("memory_store_id"), p)
		if err != nil {
			return err
		}
		return s.ok(w, forkResultToWire(res))
	})
	add("POST", historyBase+"/rollback", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		var body wireRollbackRequest
		if err := s.decodeBody(w, r, &body, false); err != nil {
			return err
		}
		var p trove.RollbackParams
		if body.SessionID != nil {
			p.SessionID = *body.SessionID
		}
		if body.APIKeyID != nil {
			p.APIKeyID = *body.APIKeyID
		}
		if body.Since != nil {
			at, err := trove.ParseExactMoment(*body.Since)
			if err != nil {
				return err
			}
			p.Since = at
		}
		p.DryRun = body.DryRun != nil && *body.DryRun
		p.Force = body.Force != nil && *body.Force
		// The answer is always a bounded page (core's 0, everything, is
		// for in-process callers only).
		p.Limit = trove.DefaultRollbackPageSize
		if body.Limit != nil {
			if *body.Limit < 1 || *body.Limit > trove.MaxRollbackPageSize {
				return trove.Errorf(trove.EINVALID, "limit must be between 1 and %d, got %d", trove.MaxRollbackPageSize, *body.Limit)
			}
			p.Limit = *body.Limit
		}
		if body.Page != nil {
			if *body.Page == "" {
				return trove.Errorf(trove.EINVALID, "page is empty: give a next_page from a previous answer, or leave it out")
			}
			p.Cursor = *body.Page
		}
		res, err := h.RollbackActor(r.Context(), r.PathValue("memory_store_id"), p)
		if err != nil {
			return err
		}
		return s.ok(w, rollbackResultToWire(res))
	})
	add("GET", historyBase+"/audit/verify", kindTrove, func(w http.ResponseWriter, r *http.Request) error {
		rep, err := h.VerifyStore(r.Context(), r.PathValue("memory_store_id"))
		if err != nil {
			return err
		}
		return s.ok(w, auditReportToWire(rep))
	})
}

// Client side.

var _ trove.HistoryService = (*Client)(nil)

func historyPath(storeID, rest string) string {
	return "/trove/v1/memory_stores/" + url.PathEscape(storeID) + rest
}

func unhex(s *string) []byte {
	if s == nil {
		return nil
	}
	b, _ := hex.DecodeString(*s)
	return b
}

func actorFromHistWire(a *wireActor) *trove.Actor {
	if a == nil {
		return nil
	}
	return &trove.Actor{Type: trove.ActorType(a.Type), APIKeyID: a.APIKeyID, SessionID: a.SessionID, UserID: a.UserID, ServiceAccountID: a.ServiceAccountID}
}

func histVersionFromWire(v *wireHistVersion) *trove.MemoryVersion {
	if v == nil {
		return nil
	}
	out := &trove.MemoryVersion{
		ID: v.ID, StoreID: v.MemoryStoreID, MemoryID: v.MemoryID, Operation: trove.Operation(v.Operation),
		Path: v.Path, Content: v.Content, SizeBytes: v.ContentSizeBytes, SHA256: v.ContentSHA256,
		CreatedBy: actorFromHistWire(v.CreatedBy), CreatedAt: parseTime(v.CreatedAt), RedactedBy: actorFromHistWire(v.RedactedBy),
		Seq: v.Seq, LeafHash: unhex(v.LeafHash), ChainHash: unhex(v.ChainHash),
	}
	if v.RedactedAt != nil {
		t := parseTime(*v.RedactedAt)
		out.RedactedAt = &t
	}
	if v.Origin != nil {
		out.Origin = &trove.VersionOrigin{StoreID: v.Origin.MemoryStoreID, VersionID: v.Origin.MemoryVersionID}
	}
	return out
}

func (c *Client) histGet(ctx context.Context, storeID, rest string, q url.Values, out any) error {
	if storeID == "" {
		return errStoreNotFound("")
	}
	_, err := c.do(ctx, http.MethodGet, historyPath(storeID, rest), q, nil, out)
	return err
}

// ListMemoriesAsOf lists a store as of a moment on the server.
func (c *Client) ListMemoriesAsOf(ctx context.Context, storeID string, at trove.Moment, p trove.ListMemoriesParams) (*trove.AsOfPage, error) {
	q := url.Values{}
	setIf := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	setIf("at", at.String())
	setIf("path_prefix", p.PathPrefix)
	setIf("page", p.Cursor)
	setIf("view", string(p.View))
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Depth != 0 {
		return nil, trove.Errorf(trove.EINVALID, "depth must be 0 for a listing as of a moment, got %d", p.Depth)
	}
	var w wireAsOfPage
	if err := c.histGet(ctx, storeID, "/as_of/memories", q, &w); err != nil {
		return nil, err
	}
	out := &trove.AsOfPage{Seq: w.Seq, Data: make([]trove.MemoryVersion, len(w.Data))}
	if w.NextPage != nil {
		out.NextPage = *w.NextPage
	}
	for i := range w.Data {
		out.Data[i] = *histVersionFromWire(&w.Data[i])
	}
	return out, nil
}

// ListVersionsWithSeq lists versions as ListVersions does, through the
// time machine's listing (/trove/v1/…/memory_versions), whose versions
// carry Seq (the /v1 shape does not), LeafHash, ChainHash and Origin.
func (c *Client) ListVersionsWithSeq(ctx context.Context, storeID string, p trove.ListVersionsParams) (*trove.Page[trove.MemoryVersion], error) {
	q := url.Values{}
	for k, v := range map[string]string{
		"memory_id": p.MemoryID, "session_id": p.SessionID, "api_key_id": p.APIKeyID, "service_account_id": p.ServiceAccountID,
		"operation": string(p.Operation), "page": p.Cursor, "view": string(p.View),
	} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.CreatedAt.GTE != nil {
		q.Set("created_at[gte]", p.CreatedAt.GTE.UTC().Format(time.RFC3339Nano))
	}
	if p.CreatedAt.LTE != nil {
		q.Set("created_at[lte]", p.CreatedAt.LTE.UTC().Format(time.RFC3339Nano))
	}
	var w wirePage[wireHistVersion]
	if err := c.histGet(ctx, storeID, "/memory_versions", q, &w); err != nil {
		return nil, err
	}
	out := &trove.Page[trove.MemoryVersion]{Data: make([]trove.MemoryVersion, len(w.Data))}
	if w.NextPage != nil {
		out.NextPage = *w.NextPage
	}
	for i := range w.Data {
		out.Data[i] = *histVersionFromWire(&w.Data[i])
	}
	return out, nil
}

// GetMemoryAsOf reads one memory as of a moment on the server.
func (c *Client) GetMemoryAsOf(ctx context.Context, storeID string, at trove.Moment, ref string, view trove.View) (*trove.MemoryVersion, error) {
	q := url.Values{"ref": {ref}}
	if s := at.String(); s != "" {
		q.Set("at", s)
	}
	if view != "" {
		q.Set("view", string(view))
	}
	var w wireHistVersion
	if err := c.histGet(ctx, storeID, "/as_of/memory", q, &w); err != nil {
		return nil, err
	}
	return histVersionFromWire(&w), nil
}

// DiffStore compares a store at two moments on the server: the first
// page (DiffStorePage).
func (c *Client) DiffStore(ctx context.Context, storeID string, from, to trove.Moment) (*trove.StoreDiff, error) {
	return c.DiffStorePage(ctx, storeID, trove.DiffParams{From: from, To: to})
}

// DiffStorePage is one page of a store diff on the server.
func (c *Client) DiffStorePage(ctx context.Context, storeID string, p trove.DiffParams) (*trove.StoreDiff, error) {
	q := url.Values{}
	if s := p.From.String(); s != "" {
		q.Set("from", s)
	}
	if s := p.To.String(); s != "" {
		q.Set("to", s)
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("page", p.Cursor)
	}
	var w wireStoreDiff
	if err := c.histGet(ctx, storeID, "/diff", q, &w); err != nil {
		return nil, err
	}
	out := &trove.StoreDiff{FromSeq: w.FromSeq, ToSeq: w.ToSeq, Changes: make([]trove.MemoryDiff, len(w.Changes))}
	if w.NextPage != nil {
		out.NextPage = *w.NextPage
	}
	for i, d := range w.Changes {
		out.Changes[i] = trove.MemoryDiff{Kind: trove.DiffKind(d.Kind), MemoryID: d.MemoryID, From: histVersionFromWire(d.From), To: histVersionFromWire(d.To),
			ContentChanged: d.ContentChanged, Redacted: d.Redacted, Patch: d.Patch}
	}
	return out, nil
}

// ForkStore forks a store on the server.
func (c *Client) ForkStore(ctx context.Context, storeID string, p trove.ForkStoreParams) (*trove.ForkResult, error) {
	if storeID == "" {
		return nil, errStoreNotFound("")
	}
	body := wireForkRequest{Name: &p.Name, Metadata: p.Metadata}
	if p.Description != "" {
		body.Description = &p.Description
	}
	if s := p.AsOf.String(); s != "" {
		body.AsOf = &s
	}
	var w wireForkResult
	res, err := c.do(ctx, http.MethodPost, historyPath(storeID, "/fork"), nil, &body, &w)
	if err != nil {
		return nil, err
	}
	st := &trove.Store{ID: w.MemoryStore.ID, WorkspaceID: res, Name: w.MemoryStore.Name, Description: w.MemoryStore.Description,
		Metadata: w.MemoryStore.Metadata, CreatedAt: parseTime(w.MemoryStore.CreatedAt), UpdatedAt: parseTime(w.MemoryStore.UpdatedAt)}
	if st.Metadata == nil {
		st.Metadata = map[string]string{}
	}
	return &trove.ForkResult{Store: st, Seq: w.Seq, Copied: w.Copied, Skipped: w.Skipped}, nil
}

// RollbackActor computes, and unless p.DryRun applies, a rollback on the
// server. With p.Limit 0 it reads a dry run's or a refusal's whole
// listing page by page, as core answers it.
func (c *Client) RollbackActor(ctx context.Context, storeID string, p trove.RollbackParams) (*trove.RollbackResult, error) {
	if storeID == "" {
		return nil, errStoreNotFound("")
	}
	body := wireRollbackRequest{DryRun: &p.DryRun, Force: &p.Force}
	limit := p.Limit
	if limit == 0 { // everything: the largest pages
		limit = trove.MaxRollbackPageSize
	}
	body.Limit = &limit
	if p.Cursor != "" {
		body.Page = &p.Cursor
	}
	if p.SessionID != "" {
		body.SessionID = &p.SessionID
	}
	if p.APIKeyID != "" {
		body.APIKeyID = &p.APIKeyID
	}
	if s := p.Since.String(); s != "" {
		body.Since = &s
	}
	var w wireRollbackResult
	if _, err := c.do(ctx, http.MethodPost, historyPath(storeID, "/rollback"), nil, &body, &w); err != nil {
		return nil, err
	}
	out := &trove.RollbackResult{SinceSeq: w.SinceSeq, Applied: w.Applied, ChangesTotal: w.ChangesTotal, ConflictsTotal: w.ConflictsTotal,
		Changes: make([]trove.RollbackChange, len(w.Changes)), Conflicts: make([]trove.RollbackConflict, len(w.Conflicts))}
	if w.NextPage != nil {
		out.NextPage = *w.NextPage
	}
	for i, ch := range w.Changes {
		out.Changes[i] = trove.RollbackChange{Action: trove.RollbackAction(ch.Action), MemoryID: ch.MemoryID, Current: histVersionFromWire(ch.Current), Target: histVersionFromWire(ch.Target)}
	}
	for i, cf := range w.Conflicts {
		out.Conflicts[i] = trove.RollbackConflict{MemoryID: cf.MemoryID, Path: cf.Path, Version: histVersionFromWire(cf.Version), Reason: cf.Reason}
	}
	if p.Limit == 0 && p.Cursor == "" && !out.Applied {
		// Everything, as core answers a limit of 0: the server pages, so
		// follow the pages of a dry run or a refusal (the dry run is
		// recomputed for each; ECONFLICT if the store changed meanwhile).
		// An applied rollback lists its first MaxRollbackPageSize; its
		// totals are whole.
		for next := out.NextPage; next != ""; {
			q := p
			q.DryRun, q.Limit, q.Cursor = true, trove.MaxRollbackPageSize, next
			more, err := c.RollbackActor(ctx, storeID, q)
			if err != nil {
				return nil, err
			}
			out.Changes = append(out.Changes, more.Changes...)
			out.Conflicts = append(out.Conflicts, more.Conflicts...)
			next = more.NextPage
		}
		out.NextPage = ""
	}
	return out, nil
}

// VerifyStore recomputes a store's hash chain on the server.
func (c *Client) VerifyStore(ctx context.Context, storeID string) (*trove.AuditReport, error) {
	var w wireAuditReport
	if err := c.histGet(ctx, storeID, "/audit/verify", nil, &w); err != nil {
		return nil, err
	}
	out := &trove.AuditReport{StoreID: w.MemoryStoreID, HeadSeq: w.HeadSeq, Head: w.Head, Verified: w.Verified, Unchained: w.Unchained,
		Redacted: w.Redacted, Gaps: w.Gaps, GapsTotal: w.GapsTotal, OK: w.OK, VerifiedAt: parseTime(w.VerifiedAt)}
	if w.Break != nil {
		out.Break = &trove.AuditBreak{VersionID: w.Break.MemoryVersionID, Seq: w.Break.Seq, Problem: w.Break.Problem}
	}
	return out, nil
}

// Wire shapes of the time machine for callers outside the server (the trove
// CLI's -o json), rendered by encoding/json exactly as the server answers.

// WireAsOfPage is a listing as of a moment: {"seq", "data", "next_page"}.
func WireAsOfPage(p *trove.AsOfPage) any { return asOfPageToWire(p) }

// WireHistVersion is a version as the time machine's endpoints answer it
// (the /v1 version plus seq, hashes and origin).
func WireHistVersion(v *trove.MemoryVersion) any { return histVersionToWire(v) }

// WireStoreDiff is a diff between two moments.
func WireStoreDiff(d *trove.StoreDiff) any { return storeDiffToWire(d) }

// WireForkResult is the answer to a fork.
func WireForkResult(r *trove.ForkResult) any { return forkResultToWire(r) }

// WireRollbackResult is the answer to a rollback.
func WireRollbackResult(r *trove.RollbackResult) any { return rollbackResultToWire(r) }

// WireAuditReport is the answer to an audit verification.
func WireAuditReport(r *trove.AuditReport) any { return auditReportToWire(r) }
