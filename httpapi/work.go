package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// Wire shapes of the self-hosted work queue (the SDK's
// betaenvironmentwork.go).

type wireWorkData struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

type wireWork struct {
	Type              string            `json:"type"`
	ID                string            `json:"id"`
	EnvironmentID     string            `json:"environment_id"`
	State             string            `json:"state"`
	Data              wireWorkData      `json:"data"`
	Metadata          map[string]string `json:"metadata"`
	Secret            *string           `json:"secret"`
	CreatedAt         string            `json:"created_at"`
	AcknowledgedAt    *string           `json:"acknowledged_at"`
	StartedAt         *string           `json:"started_at"`
	LatestHeartbeatAt *string           `json:"latest_heartbeat_at"`
	StopRequestedAt   *string           `json:"stop_requested_at"`
	StoppedAt         *string           `json:"stopped_at"`
}

func workToWire(it *trove.WorkItem) wireWork {
	w := wireWork{Type: "work", ID: it.ID, EnvironmentID: it.EnvironmentID, State: string(it.State),
		Data: wireWorkData{Type: trove.WorkDataSession, ID: it.SessionID}, Metadata: it.Metadata,
		Secret: nilIfEmpty(it.Secret), CreatedAt: formatTime(it.CreatedAt),
		AcknowledgedAt: formatTimePtr(it.AcknowledgedAt), StartedAt: formatTimePtr(it.StartedAt),
		LatestHeartbeatAt: formatTimePtr(it.LatestHeartbeatAt), StopRequestedAt: formatTimePtr(it.StopRequestedAt),
		StoppedAt: formatTimePtr(it.StoppedAt)}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	return w
}

// queryMillis parses a positive millisecond count (absent: 0).
func queryMillis(q url.Values, name string, max int64) (time.Duration, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || (max > 0 && n > max) {
		if max > 0 {
			return 0, trove.Errorf(trove.EINVALID, "%s must be an integer from 1 to %d, got %q", name, max, v)
		}
		return 0, trove.Errorf(trove.EINVALID, "%s must be a positive integer, got %q", name, v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

func (s *Server) pollWork(w http.ResponseWriter, r *http.Request) error {
	block, err := queryMillis(queryOf(w, r), "block_ms", trove.MaxPollBlock.Milliseconds())
	if err != nil {
		return err
	}
	reclaim, err := queryMillis(queryOf(w, r), "reclaim_older_than_ms", 0)
	if err != nil {
		return err
	}
	it, err := s.work.PollWork(r.Context(), r.PathValue("environment_id"), trove.PollWorkParams{
		Block: block, ReclaimAfter: reclaim, WorkerID: r.Header.Get("Anthropic-Worker-Id")})
	if err != nil {
		return err
	}
	if it == nil {
		// No work: the JSON null the SDK's Poll decodes to a nil item.
		return s.ok(w, nil)
	}
	out := workToWire(it)
	return s.ok(w, &out)
}

func (s *Server) ackWork(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	it, err := s.work.AckWork(r.Context(), r.PathValue("environment_id"), r.PathValue("work_id"))
	if err != nil {
		return err
	}
	out := workToWire(it)
	return s.ok(w, &out)
}

type wireHeartbeat struct {
	Type          string `json:"type"`
	LastHeartbeat string `json:"last_heartbeat"`
	LeaseExtended bool   `json:"lease_extended"`
	State         string `json:"state"`
	TTLSeconds    int64  `json:"ttl_seconds"`
}

func (s *Server) heartbeatWork(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	q := queryOf(w, r)
	var p trove.HeartbeatParams
	if v := q.Get("desired_ttl_seconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return trove.Errorf(trove.EINVALID, "desired_ttl_seconds must be a positive integer, got %q", v)
		}
		p.DesiredTTL = time.Duration(min(n, 86400)) * time.Second
	}
	p.ExpectedLastHeartbeat = q.Get("expected_last_heartbeat")
	if p.ExpectedLastHeartbeat == "" {
		p.ExpectedLastHeartbeat = trove.NoHeartbeat
	}
	l, err := s.work.HeartbeatWork(r.Context(), r.PathValue("environment_id"), r.PathValue("work_id"), p)
	if err != nil {
		return err
	}
	return s.ok(w, &wireHeartbeat{Type: "work_heartbeat", LastHeartbeat: l.LastHeartbeat, LeaseExtended: l.LeaseExtended,
		State: string(l.State), TTLSeconds: int64(l.TTL / time.Second)})
}

func (s *Server) stopWork(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Force *bool `json:"force"`
	}
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	it, err := s.work.StopWork(r.Context(), r.PathValue("environment_id"), r.PathValue("work_id"), body.Force != nil && *body.Force)
	if err != nil {
		return err
	}
	out := workToWire(it)
	return s.ok(w, &out)
}

func (s *Server) updateWork(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Metadata map[string]jsontext.Value `json:"metadata"`
	}
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	if body.Metadata == nil {
		return trove.Errorf(trove.EINVALID, "metadata is required")
	}
	md, err := metadataPatch(body.Metadata)
	if err != nil {
		return err
	}
	it, err := s.work.UpdateWork(r.Context(), r.PathValue("environment_id"), r.PathValue("work_id"), md)
	if err != nil {
		return err
	}
	out := workToWire(it)
	return s.ok(w, &out)
}

func (s *Server) getWork(w http.ResponseWriter, r *http.Request) error {
	it, err := s.work.GetWork(r.Context(), r.PathValue("environment_id"), r.PathValue("work_id"))
	if err != nil {
		return err
	}
	out := workToWire(it)
	return s.ok(w, &out)
}

func (s *Server) listWork(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	page, err := s.work.ListWork(r.Context(), r.PathValue("environment_id"), trove.ListWorkParams{Limit: limit, Cursor: q.Get("page")})
	if err != nil {
		return err
	}
	out := wirePage[wireWork]{Data: make([]wireWork, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = workToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

func (s *Server) workStats(w http.ResponseWriter, r *http.Request) error {
	st, err := s.work.WorkStats(r.Context(), r.PathValue("environment_id"))
	if err != nil {
		return err
	}
	return s.ok(w, &struct {
		Type           string  `json:"type"`
		Depth          int     `json:"depth"`
		Pending        int     `json:"pending"`
		OldestQueuedAt *string `json:"oldest_queued_at"`
		WorkersPolling int     `json:"workers_polling"`
	}{"work_queue_stats", st.Depth, st.Pending, formatTimePtr(st.OldestQueuedAt), st.WorkersPolling})
}
