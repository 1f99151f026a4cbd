package trove

import (
	"os"
	"strings"
)

// The Claude models Trove's own features call the Messages API with, unless
// the caller chooses one. They are kept here, in one place, because models
// reach end of life: TestModelDefaultsAreCurrent (models_test.go) fails when
// the official Go SDK this module uses marks one of them deprecated or no
// longer lists it, so an SDK upgrade that ages a default is caught by the
// tests, not by a user's failed request.
//
// Each is overridable by a flag of the command that uses it and by an
// environment variable, the flag winning over the variable and the
// variable over the default:
//
//	default              flag                                env
//	DefaultAgentModel    trove agent --model                 TROVE_AGENT_MODEL
//	DefaultDreamModel    trove dreams create --model,        TROVE_DREAM_MODEL
//	                     the console's new-dream form
//	DefaultSessionModel  the sessions loop's --model         TROVE_SESSION_MODEL
//
// The API itself has no defaults: a dream created over HTTP names its model.
const (
	// DefaultAgentModel runs `trove agent` and memtool/claude's Runner.
	DefaultAgentModel = "claude-sonnet-5-5"
	// DefaultDreamModel runs a dream (the CLI's --model default and the
	// console's form).
	DefaultDreamModel = "claude-sonnet-5-5"
	// DefaultSessionModel runs the agent loop of a managed session.
	DefaultSessionModel = "claude-sonnet-5-5"
)

// The environment variables that override the model defaults.
const (
	AgentModelEnv   = "TROVE_AGENT_MODEL"
	DreamModelEnv   = "TROVE_DREAM_MODEL"
	SessionModelEnv = "TROVE_SESSION_MODEL"
)

// ModelFromEnv returns the model the environment variable env names, when
// it is set to something other than blanks, else def: the default of a
// --model flag, e.g. ModelFromEnv(DreamModelEnv, DefaultDreamModel).
func ModelFromEnv(env, def string) string {
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return v
	}
	return def
}
