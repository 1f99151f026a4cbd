package httpapi

import (
	"net/http"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// addManagedRoutes adds the Managed Agents routes whose services are
// configured.
func (s *Server) addManagedRoutes(add func(method, path string, kind routeKind, h handlerFunc)) {
	if s.agents != nil {
		const agent = "/v1/agents/{agent_id}"
		add("POST", "/v1/agents", kindManaged, s.createAgent)
		add("GET", "/v1/agents", kindManaged, s.listAgents)
		add("GET", agent, kindManaged, s.getAgent)
		add("POST", agent, kindManaged, s.updateAgent)
		add("POST", agent+"/archive", kindManaged, s.archiveAgent)
		add("GET", agent+"/versions", kindManaged, s.listAgentVersions)
	}
	if s.envs != nil {
		const env = "/v1/environments/{environment_id}"
		add("POST", "/v1/environments", kindManaged, s.createEnvironment)
		add("GET", "/v1/environments", kindManaged, s.listEnvironments)
		add("GET", env, kindManaged, s.getEnvironment)
		add("POST", env, kindManaged, s.updateEnvironment)
		add("DELETE", env, kindManaged, s.deleteEnvironment)
		add("POST", env+"/archive", kindManaged, s.archiveEnvironment)
		const keys = "/trove/v1/environments/{environment_id}/keys"
		add("POST", keys, kindTrove, s.createEnvironmentKey)
		add("GET", keys, kindTrove, s.listEnvironmentKeys)
		add("POST", keys+"/{key_id}/revoke", kindTrove, s.revokeEnvironmentKey)
	}
	if s.work != nil {
		const work = "/v1/environments/{environment_id}/work"
		add("GET", work+"/poll", kindManaged, s.pollWork)
		add("GET", work+"/stats", kindManaged, s.workStats)
		add("GET", work, kindManaged, s.listWork)
		add("GET", work+"/{work_id}", kindManaged, s.getWork)
		add("POST", work+"/{work_id}", kindManaged, s.updateWork)
		add("POST", work+"/{work_id}/ack", kindManaged, s.ackWork)
		add("POST", work+"/{work_id}/heartbeat", kindManaged, s.heartbeatWork)
		add("POST", work+"/{work_id}/stop", kindManaged, s.stopWork)
	}
}

// Wire shapes of /v1/environments (the SDK's betaenvironment.go).

type wireEnvConfig struct {
	Type string `json:"type"`
}

type wireEnvironment struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description *string           `json:"description"`
	Config      wireEnvConfig     `json:"config"`
	Metadata    map[string]string `json:"metadata"`
	Scope       string            `json:"scope"`
	CreatedAt   string            `json:"created_at"`
	UpdatedAt   string            `json:"updated_at"`
	ArchivedAt  *string           `json:"archived_at"`
}

func envToWire(e *trove.Environment) wireEnvironment {
	w := wireEnvironment{Type: "environment", ID: e.ID, Name: e.Name, Description: e.Description,
		Config: wireEnvConfig{Type: e.Type}, Metadata: e.Metadata, Scope: "organization",
		CreatedAt: formatTime(e.CreatedAt), UpdatedAt: formatTime(e.UpdatedAt), ArchivedAt: formatTimePtr(e.ArchivedAt)}
	if w.Metadata == nil {
		w.Metadata = map[string]string{}
	}
	return w
}

type wireEnvBody struct {
	Name        jsontext.Value            `json:"name"`
	Description jsontext.Value            `json:"description"`
	Config      jsontext.Value            `json:"config"`
	Metadata    map[string]jsontext.Value `json:"metadata"`
	Scope       jsontext.Value            `json:"scope"`
}

// configType reads the config member: "" for absent or null, the
// self_hosted type, or EINVALID naming any other kind.
func (b *wireEnvBody) configType() (string, error) {
	if len(b.Config) == 0 || b.Config.Kind() == 'n' {
		return "", nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b.Config, &head); err != nil || b.Config.Kind() != '{' {
		return "", trove.Errorf(trove.EINVALID, "config must be an object with a type")
	}
	switch head.Type {
	case trove.EnvironmentSelfHosted:
		var c wireEnvConfig
		if err := json.Unmarshal(b.Config, &c, decodeOptions); err != nil {
			return "", prefixErr("config", jsonError(err))
		}
		return c.Type, nil
	case "cloud":
		return "", trove.Errorf(trove.EINVALID, "config.type: Trove runs only self_hosted environments; cloud environments are not supported")
	}
	return "", trove.Errorf(trove.EINVALID, "config.type must be %q, got %q", trove.EnvironmentSelfHosted, head.Type)
}

func (b *wireEnvBody) checkScope() error {
	if len(b.Scope) == 0 || b.Scope.Kind() == 'n' {
		return nil
	}
	var sc string
	if err := json.Unmarshal(b.Scope, &sc); err != nil {
		return trove.Errorf(trove.EINVALID, "scope must be a string or null")
	}
	switch sc {
	case "organization":
		return nil
	case "account":
		return trove.Errorf(trove.EINVALID, "scope: Trove environments are visible to the whole workspace; \"account\" is not supported")
	}
	return trove.Errorf(trove.EINVALID, "scope must be \"organization\", got %q", sc)
}

func (s *Server) createEnvironment(w http.ResponseWriter, r *http.Request) error {
	var body wireEnvBody
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	var p trove.CreateEnvironmentParams
	name, set, err := nullableString("name", body.Name)
	if err != nil {
		return err
	}
	if !set || body.Name.Kind() == 'n' {
		return trove.Errorf(trove.EINVALID, "name is required")
	}
	p.Name = name
	if d, set, err := nullableString("description", body.Description); err != nil {
		return err
	} else if set && body.Description.Kind() != 'n' {
		p.Description = &d
	}
	if p.Type, err = body.configType(); err != nil {
		return err
	}
	if err := body.checkScope(); err != nil {
		return err
	}
	if body.Metadata != nil {
		p.Metadata = map[string]string{}
		for k, v := range body.Metadata {
			var sv string
			if err := json.Unmarshal(v, &sv); err != nil {
				return trove.Errorf(trove.EINVALID, "metadata values must be strings (key %q)", k)
			}
			p.Metadata[k] = sv
		}
	}
	e, err := s.envs.CreateEnvironment(r.Context(), p)
	if err != nil {
		return err
	}
	out := envToWire(e)
	return s.ok(w, &out)
}

func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) error {
	e, err := s.envs.GetEnvironment(r.Context(), r.PathValue("environment_id"))
	if err != nil {
		return err
	}
	out := envToWire(e)
	return s.ok(w, &out)
}

func (s *Server) updateEnvironment(w http.ResponseWriter, r *http.Request) error {
	var body wireEnvBody
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	var p trove.UpdateEnvironmentParams
	if n, set, err := nullableString("name", body.Name); err != nil {
		return err
	} else if set && body.Name.Kind() != 'n' {
		p.Name = &n
	}
	if d, set, err := nullableString("description", body.Description); err != nil {
		return err
	} else if set {
		if body.Description.Kind() == 'n' {
			p.ClearDescription = true
		} else {
			p.Description = &d
		}
	}
	var err error
	if p.Type, err = body.configType(); err != nil {
		return err
	}
	if err := body.checkScope(); err != nil {
		return err
	}
	if body.Metadata != nil {
		if p.Metadata, err = metadataPatch(body.Metadata); err != nil {
			return err
		}
	}
	e, err := s.envs.UpdateEnvironment(r.Context(), r.PathValue("environment_id"), p)
	if err != nil {
		return err
	}
	out := envToWire(e)
	return s.ok(w, &out)
}

func (s *Server) listEnvironments(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	arch, err := queryBool(q, "include_archived")
	if err != nil {
		return err
	}
	page, err := s.envs.ListEnvironments(r.Context(), trove.ListEnvironmentsParams{Limit: limit, Cursor: q.Get("page"), IncludeArchived: arch})
	if err != nil {
		return err
	}
	out := wirePage[wireEnvironment]{Data: make([]wireEnvironment, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = envToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

func (s *Server) archiveEnvironment(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	e, err := s.envs.ArchiveEnvironment(r.Context(), r.PathValue("environment_id"))
	if err != nil {
		return err
	}
	out := envToWire(e)
	return s.ok(w, &out)
}

func (s *Server) deleteEnvironment(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("environment_id")
	if err := s.envs.DeleteEnvironment(r.Context(), id); err != nil {
		return err
	}
	return s.ok(w, &struct {
		ID   string `json:"id"`
		Type string `json:"type"`
	}{id, "environment_deleted"})
}

// Environment keys (Trove extension, /trove/v1/environments/{id}/keys).

type wireEnvKey struct {
	Type          string  `json:"type"`
	ID            string  `json:"id"`
	EnvironmentID string  `json:"environment_id"`
	Name          string  `json:"name"`
	Hint          string  `json:"hint"`
	CreatedAt     string  `json:"created_at"`
	RevokedAt     *string `json:"revoked_at"`
	Secret        string  `json:"secret,omitempty"`
}

func envKeyToWire(k *trove.EnvironmentKey) wireEnvKey {
	return wireEnvKey{Type: "environment_key", ID: k.ID, EnvironmentID: k.EnvironmentID, Name: k.Name, Hint: k.Hint,
		CreatedAt: formatTime(k.CreatedAt), RevokedAt: formatTimePtr(k.RevokedAt)}
}

func (s *Server) createEnvironmentKey(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		Name string `json:"name"`
	}
	if err := s.decodeBody(w, r, &body, true); err != nil {
		return err
	}
	k, secret, err := s.envs.CreateEnvironmentKey(r.Context(), r.PathValue("environment_id"), body.Name)
	if err != nil {
		return err
	}
	out := envKeyToWire(k)
	out.Secret = secret
	return s.ok(w, &out)
}

func (s *Server) listEnvironmentKeys(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.envs.ListEnvironmentKeys(r.Context(), r.PathValue("environment_id"))
	if err != nil {
		return err
	}
	out := wirePage[wireEnvKey]{Data: make([]wireEnvKey, len(keys))}
	for i := range keys {
		out.Data[i] = envKeyToWire(&keys[i])
	}
	return s.ok(w, &out)
}

func (s *Server) revokeEnvironmentKey(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	k, err := s.envs.RevokeEnvironmentKey(r.Context(), r.PathValue("environment_id"), r.PathValue("key_id"))
	if err != nil {
		return err
	}
	out := envKeyToWire(k)
	return s.ok(w, &out)
}
