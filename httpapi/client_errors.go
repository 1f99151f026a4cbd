package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/trovehq/trove"
)

// codeForType is the inverse of errorClasses: an envelope type back to a
// trove code.
var codeForType = map[string]string{
	"invalid_request_error":            trove.EINVALID,
	"authentication_error":             trove.EUNAUTHENTICATED,
	"permission_error":                 trove.EFORBIDDEN,
	"not_found_error":                  trove.ENOTFOUND,
	"memory_path_conflict_error":       trove.EPATHCONFLICT,
	"memory_precondition_failed_error": trove.EPRECONDITION,
	"conflict_error":                   trove.ECONFLICT,
	"request_too_large":                trove.ETOOLARGE,
	"overloaded_error":                 trove.EUNAVAILABLE,
	"rate_limit_error":                 trove.EUNAVAILABLE,
	"timeout_error":                    trove.EUNAVAILABLE,
}

// codeForStatus classifies an error response whose type is not known.
func codeForStatus(status int) string {
	switch {
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return trove.EINVALID
	case status == http.StatusUnauthorized:
		return trove.EUNAUTHENTICATED
	case status == http.StatusForbidden:
		return trove.EFORBIDDEN
	case status == http.StatusNotFound:
		return trove.ENOTFOUND
	case status == http.StatusConflict, status == http.StatusPreconditionFailed:
		return trove.ECONFLICT
	case status == http.StatusRequestEntityTooLarge:
		return trove.ETOOLARGE
	case status == http.StatusServiceUnavailable, status == http.StatusTooManyRequests,
		status == http.StatusGatewayTimeout, status == 529, status == http.StatusBadGateway:
		return trove.EUNAVAILABLE
	}
	return trove.EINTERNAL
}

// envelopeError is the part of the error envelope fromEnvelope reads.
type envelopeError struct {
	Error struct {
		Type                string `json:"type"`
		Message             string `json:"message"`
		ConflictingPath     string `json:"conflicting_path"`
		ConflictingMemoryID string `json:"conflicting_memory_id"`
		Details             struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
}

// fromEnvelope builds the *trove.Error for an error response.
func fromEnvelope(status int, body []byte, cause error) *trove.Error {
	var env envelopeError
	_ = json.Unmarshal(body, &env)
	code, ok := codeForType[env.Error.Type]
	if !ok {
		code = codeForStatus(status)
	}
	if env.Error.Type == "api_error" && status == http.StatusServiceUnavailable {
		code = trove.EUNAVAILABLE
	}
	msg := env.Error.Message
	if msg == "" {
		msg = fmt.Sprintf("server answered %d %s", status, http.StatusText(status))
	}
	return &trove.Error{
		Code:                code,
		Message:             msg,
		ConflictingPath:     env.Error.ConflictingPath,
		ConflictingMemoryID: env.Error.ConflictingMemoryID,
		DetailCode:          env.Error.Details.ErrorCode,
		Err:                 cause,
	}
}

// translate turns an SDK or transport error into a *trove.Error.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var apierr *anthropic.Error
	if errors.As(err, &apierr) {
		return fromEnvelope(apierr.StatusCode, []byte(apierr.RawJSON()), err)
	}
	var te *trove.Error
	if errors.As(err, &te) {
		return te
	}
	return &trove.Error{Code: trove.EUNAVAILABLE, Message: "the Trove server could not be reached", Err: err}
}
