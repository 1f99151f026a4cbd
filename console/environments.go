package console

import (
	"maps"
	"net/http"
	"net/url"

	"github.com/trovehq/trove"
)

func init() {
	maps.Copy(notices, map[string]string{
		"keyrevoked": "Key revoked. Workers using it stop authenticating within seconds.",
	})
}

func (h *Handler) envsOff() error {
	return trove.Errorf(trove.ENOTFOUND, "environments are not served here")
}

type environmentsData struct {
	Environments []trove.Environment
	Archived     bool   // archived environments shown
	Next         string // cursor of the next page
	Base         string // this list's URL with its filter, for paging
}

// environmentsPage lists the workspace's environments, newest first, a
// page at a time, with or without archived ones.
func (h *Handler) environmentsPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.envs == nil {
		return h.envsOff()
	}
	q := query(r)
	d := environmentsData{Archived: q.Get("archived") == "1", Base: Prefix + "environments"}
	if d.Archived {
		d.Base += "?archived=1"
	}
	pg, err := h.envs.ListEnvironments(r.Context(), trove.ListEnvironmentsParams{Limit: 50, Cursor: q.Get("cursor"), IncludeArchived: d.Archived})
	if err != nil {
		return err
	}
	d.Environments, d.Next = pg.Data, pg.NextPage
	h.render(w, r, http.StatusOK, "environments", s, &view{Title: "Environments", Notice: notice(r), Data: d})
	return nil
}

type environmentData struct {
	Env  *trove.Environment
	Keys []trove.EnvironmentKey
	// Minted is the key just minted and Secret its secret: shown on the
	// response to the mint only, never again.
	Minted *trove.EnvironmentKey
	Secret string
}

func (h *Handler) environmentData(r *http.Request, id string) (*environmentData, error) {
	env, err := h.envs.GetEnvironment(r.Context(), id)
	if err != nil {
		return nil, err
	}
	keys, err := h.envs.ListEnvironmentKeys(r.Context(), env.ID)
	if err != nil {
		return nil, err
	}
	return &environmentData{Env: env, Keys: keys}, nil
}

// environmentPage shows an environment and its keys (name, hint, created,
// revoked; never a secret), with the forms that mint and revoke them.
func (h *Handler) environmentPage(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.envs == nil {
		return h.envsOff()
	}
	d, err := h.environmentData(r, r.PathValue("id"))
	if err != nil {
		return err
	}
	h.render(w, r, http.StatusOK, "environment", s, &view{Title: "Environment " + d.Env.Name, Notice: notice(r), Data: d})
	return nil
}

// mintEnvironmentKey mints a key and answers with the environment's page
// showing its secret once (not a redirect: the secret is in no URL and no
// later page; console responses are not cached).
func (h *Handler) mintEnvironmentKey(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.envs == nil {
		return h.envsOff()
	}
	id := r.PathValue("id")
	k, secret, err := h.envs.CreateEnvironmentKey(r.Context(), id, r.PostFormValue("name"))
	if err != nil {
		return err
	}
	d, err := h.environmentData(r, id)
	if err != nil {
		return err
	}
	d.Minted, d.Secret = k, secret
	h.render(w, r, http.StatusOK, "environment", s, &view{Title: "Environment " + d.Env.Name, Data: d})
	return nil
}

// revokeEnvironmentKey revokes a key once the confirmation box is ticked.
func (h *Handler) revokeEnvironmentKey(w http.ResponseWriter, r *http.Request, s *signed) error {
	if h.envs == nil {
		return h.envsOff()
	}
	if r.PostFormValue("confirm") != "yes" {
		return trove.Errorf(trove.EINVALID, "revoking is one-way: tick the confirmation box to revoke the key")
	}
	id := r.PathValue("id")
	if _, err := h.envs.RevokeEnvironmentKey(r.Context(), id, r.PathValue("kid")); err != nil {
		return err
	}
	redirect(w, r, envURL(id), "keyrevoked")
	return nil
}

// envKeyRevokeURL is the form action that revokes a key.
func envKeyRevokeURL(envID, keyID string) string {
	return envURL(envID) + "/keys/" + url.PathEscape(keyID) + "/revoke"
}
