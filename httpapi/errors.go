package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/trovehq/trove"
)

// errorClass is how one trove error code appears on the wire.
type errorClass struct {
	status int
	typ    string
	// retry is the x-should-retry header value: "false" for deterministic
	// refusals, "true" for transient ones, "" to leave the SDK's default.
	retry string
}

// errorClasses maps every trove error code to its HTTP status, envelope
// type and retry hint. It is the only place that does so on the server;
// codeForType in client.go is its inverse.
var errorClasses = map[string]errorClass{
	trove.EINVALID:         {http.StatusBadRequest, "invalid_request_error", "false"},
	trove.EUNAUTHENTICATED: {http.StatusUnauthorized, "authentication_error", "false"},
	trove.EFORBIDDEN:       {http.StatusForbidden, "permission_error", "false"},
	trove.ENOTFOUND:        {http.StatusNotFound, "not_found_error", "false"},
	trove.EPATHCONFLICT:    {http.StatusConflict, "memory_path_conflict_error", "false"},
	trove.EPRECONDITION:    {http.StatusConflict, "memory_precondition_failed_error", "false"},
	trove.ECONFLICT:        {http.StatusConflict, "conflict_error", "false"},
	trove.ETOOLARGE:        {http.StatusRequestEntityTooLarge, "request_too_large", "false"},
	trove.ELEASELOST:       {http.StatusPreconditionFailed, "invalid_request_error", "false"},
	trove.EUNAVAILABLE:     {http.StatusServiceUnavailable, "api_error", "true"},
	trove.EINTERNAL:        {http.StatusInternalServerError, "api_error", ""},
}

// internalMessage is all a client learns about an EINTERNAL error.
const internalMessage = "internal server error"

// wireErrorBody is error in the envelope.
type wireErrorBody struct {
	Type                string           `json:"type"`
	Message             string           `json:"message"`
	ConflictingPath     *string          `json:"conflicting_path,omitempty"`
	ConflictingMemoryID *string          `json:"conflicting_memory_id,omitempty"`
	Details             *wireErrorDetail `json:"details,omitempty"`
}

type wireErrorDetail struct {
	ErrorCode    string          `json:"error_code"`
	CurrentState *wireLeaseState `json:"current_state,omitempty"`
}

// wireLeaseState is a work item's lease in a refused heartbeat's details
// (ELEASELOST).
type wireLeaseState struct {
	State         string  `json:"state"`
	LastHeartbeat *string `json:"last_heartbeat"`
	LeaseExtended bool    `json:"lease_extended"`
	TTLSeconds    int64   `json:"ttl_seconds"`
}

// wireError is the error envelope.
type wireError struct {
	Type      string        `json:"type"`
	Error     wireErrorBody `json:"error"`
	RequestID string        `json:"request_id"`
}

// writeError sends err as the error envelope with the status its code maps
// to. Errors that are not *trove.Error, and EINTERNAL ones, are logged with
// their detail and sent with a generic message.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if sr, ok := err.(*statusRefusal); ok {
		s.sendError(w, sr.status, sr.retry, wireErrorBody{Type: sr.typ, Message: sr.msg})
		return
	}
	code := trove.ErrorCode(err)
	class, ok := errorClasses[code]
	if !ok {
		code, class = trove.EINTERNAL, errorClasses[trove.EINTERNAL]
	}
	body := wireErrorBody{Type: class.typ}
	var te *trove.Error
	if errors.As(err, &te) && code != trove.EINTERNAL {
		body.Message = te.Message
		if code == trove.EPATHCONFLICT {
			p, id := te.ConflictingPath, te.ConflictingMemoryID
			body.ConflictingPath, body.ConflictingMemoryID = &p, &id
		}
		if te.DetailCode != "" {
			body.Details = &wireErrorDetail{ErrorCode: te.DetailCode}
		}
		if code == trove.ELEASELOST && te.Lease != nil {
			st := &wireLeaseState{State: string(te.Lease.State), LeaseExtended: te.Lease.LeaseExtended, TTLSeconds: int64(te.Lease.TTL / time.Second)}
			if te.Lease.LastHeartbeat != "" {
				hb := te.Lease.LastHeartbeat
				st.LastHeartbeat = &hb
			}
			body.Details = &wireErrorDetail{ErrorCode: "heartbeat_precondition_failed", CurrentState: st}
		}
	} else {
		body.Message = internalMessage
	}
	if code == trove.EINTERNAL || code == trove.EUNAVAILABLE {
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestIDFrom(w)),
			slog.String("code", code),
			slog.String("error", err.Error()))
	}
	s.sendError(w, class.status, class.retry, body)
}

// writeStatusError sends an envelope for a refusal that has no trove code
// (405), with x-should-retry: false.
func (s *Server) writeStatusError(w http.ResponseWriter, status int, typ, msg string) {
	s.sendError(w, status, "false", wireErrorBody{Type: typ, Message: msg})
}

func (s *Server) sendError(w http.ResponseWriter, status int, retry string, body wireErrorBody) {
	h := w.Header()
	if retry != "" {
		h.Set("X-Should-Retry", retry)
	}
	s.writeJSON(w, status, &wireError{Type: "error", Error: body, RequestID: requestIDFrom(w)})
}
