package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
)

// BetaDreaming is the beta flag every /v1/dreams call must send
// (managed-agents-2026-04-01 alone does not grant access, as on the hosted
// API).
const BetaDreaming = "dreaming-2026-04-21"

// Wire shapes of /v1/dreams (the SDK's betadream.go).

type wireDreamInput struct {
	Type          string   `json:"type"`
	MemoryStoreID string   `json:"memory_store_id,omitempty"`
	SessionIDs    []string `json:"session_ids,omitempty"`
}

type wireDreamModel struct {
	ID    string `json:"id"`
	Speed string `json:"speed"`
}

type wireDreamOutputBehavior struct {
	Type          string `json:"type"`
	MemoryStoreID string `json:"memory_store_id,omitempty"`
}

type wireDreamOutput struct {
	Type          string `json:"type"`
	MemoryStoreID string `json:"memory_store_id"`
}

type wireDreamUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type wireDreamError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

type wireDream struct {
	Type           string                  `json:"type"`
	ID             string                  `json:"id"`
	Status         string                  `json:"status"`
	Inputs         []wireDreamInput        `json:"inputs"`
	Outputs        []wireDreamOutput       `json:"outputs"`
	Model          wireDreamModel          `json:"model"`
	Instructions   *string                 `json:"instructions"`
	OutputBehavior wireDreamOutputBehavior `json:"output_behavior"`
	SessionID      *string                 `json:"session_id"`
	Usage          wireDreamUsage          `json:"usage"`
	Error          *wireDreamError         `json:"error"`
	CreatedAt      string                  `json:"created_at"`
	EndedAt        *string                 `json:"ended_at"`
	ArchivedAt     *string                 `json:"archived_at"`
}

func dreamToWire(d *trove.Dream) wireDream {
	w := wireDream{
		Type:   "dream",
		ID:     d.ID,
		Status: string(d.Status),
		Inputs: []wireDreamInput{
			{Type: "memory_store", MemoryStoreID: d.InputStoreID},
			{Type: "sessions", SessionIDs: append([]string{}, d.SessionIDs...)},
		},
		Outputs:        []wireDreamOutput{},
		Model:          wireDreamModel{ID: d.Model, Speed: d.ModelSpeed},
		OutputBehavior: wireDreamOutputBehavior{Type: d.OutputBehavior},
		Usage: wireDreamUsage{
			InputTokens: d.Usage.InputTokens, OutputTokens: d.Usage.OutputTokens,
			CacheReadInputTokens: d.Usage.CacheReadInputTokens, CacheCreationInputTokens: d.Usage.CacheCreationInputTokens,
		},
		CreatedAt:  formatTime(d.CreatedAt),
		EndedAt:    formatTimePtr(d.EndedAt),
		ArchivedAt: formatTimePtr(d.ArchivedAt),
	}
	if d.OutputBehavior == trove.OutputUpdateExisting {
		w.OutputBehavior.MemoryStoreID = d.InputStoreID
	}
	if d.OutputStoreID != "" {
		w.Outputs = append(w.Outputs, wireDreamOutput{Type: "memory_store", MemoryStoreID: d.OutputStoreID})
	}
	if d.Instructions != "" {
		in := d.Instructions
		w.Instructions = &in
	}
	if d.SessionID != "" {
		id := d.SessionID
		w.SessionID = &id
	}
	if d.Error != nil {
		w.Error = &wireDreamError{Type: d.Error.Type, Message: d.Error.Message}
	}
	return w
}

// Request bodies.

type wireDreamInputParam struct {
	Type          *string  `json:"type"`
	MemoryStoreID *string  `json:"memory_store_id"`
	SessionIDs    []string `json:"session_ids"`
}

type wireDreamModelParam struct {
	ID    *string `json:"id"`
	Speed *string `json:"speed"`
}

type wireCreateDream struct {
	Inputs         []wireDreamInputParam `json:"inputs"`
	Model          jsontext.Value        `json:"model"`
	Instructions   *string               `json:"instructions"`
	OutputBehavior *struct {
		Type          *string `json:"type"`
		MemoryStoreID *string `json:"memory_store_id"`
	} `json:"output_behavior"`
}

// checkDreamBeta requires the dreaming beta among the anthropic-beta values.
func checkDreamBeta(h http.Header) error {
	for _, line := range h.Values("Anthropic-Beta") {
		for v := range strings.SplitSeq(line, ",") {
			if strings.TrimSpace(v) == BetaDreaming {
				return nil
			}
		}
	}
	return trove.Errorf(trove.EINVALID, "dream calls need the anthropic-beta header %s", BetaDreaming)
}

func (s *Server) createDream(w http.ResponseWriter, r *http.Request) error {
	var body wireCreateDream
	if err := s.decodeBody(w, r, &body, false); err != nil {
		return err
	}
	var p trove.CreateDreamParams
	var stores, sessions int
	if body.Inputs == nil {
		return trove.Errorf(trove.EINVALID, "inputs is required")
	}
	for i, in := range body.Inputs {
		if in.Type == nil {
			return trove.Errorf(trove.EINVALID, "inputs[%d].type is required", i)
		}
		switch *in.Type {
		case "memory_store":
			stores++
			if in.MemoryStoreID == nil || *in.MemoryStoreID == "" {
				return trove.Errorf(trove.EINVALID, "inputs[%d].memory_store_id is required", i)
			}
			if in.SessionIDs != nil {
				return trove.Errorf(trove.EINVALID, "inputs[%d]: a memory_store input takes no session_ids", i)
			}
			p.StoreID = *in.MemoryStoreID
		case "sessions":
			sessions++
			if in.MemoryStoreID != nil {
				return trove.Errorf(trove.EINVALID, "inputs[%d]: a sessions input takes no memory_store_id", i)
			}
			if in.SessionIDs == nil {
				return trove.Errorf(trove.EINVALID, "inputs[%d].session_ids is required", i)
			}
			p.SessionIDs = in.SessionIDs
		default:
			return trove.Errorf(trove.EINVALID, "inputs[%d].type must be \"memory_store\" or \"sessions\", got %q", i, *in.Type)
		}
	}
	if stores != 1 || sessions != 1 {
		return trove.Errorf(trove.EINVALID, "inputs must hold exactly one memory_store input and exactly one sessions input (got %d and %d)", stores, sessions)
	}
	switch body.Model.Kind() {
	case '"':
		if err := json.Unmarshal(body.Model, &p.Model); err != nil {
			return trove.Errorf(trove.EINVALID, "model must be a string or an object with id and speed")
		}
	case '{':
		var m wireDreamModelParam
		if err := json.Unmarshal(body.Model, &m, decodeOptions); err != nil {
			return jsonError(err)
		}
		if m.ID == nil {
			return trove.Errorf(trove.EINVALID, "model.id is required")
		}
		p.Model = *m.ID
		if m.Speed != nil {
			p.ModelSpeed = *m.Speed
			if p.ModelSpeed == "" {
				return trove.Errorf(trove.EINVALID, "model.speed must be \"standard\"")
			}
		}
	case 0:
		return trove.Errorf(trove.EINVALID, "model is required")
	default:
		return trove.Errorf(trove.EINVALID, "model must be a string or an object with id and speed")
	}
	if body.Instructions != nil {
		if *body.Instructions == "" {
			return trove.Errorf(trove.EINVALID, "instructions must be 1 to 4096 characters, or null")
		}
		p.Instructions = *body.Instructions
	}
	if ob := body.OutputBehavior; ob != nil {
		if ob.Type == nil {
			return trove.Errorf(trove.EINVALID, "output_behavior.type is required")
		}
		p.OutputBehavior = *ob.Type
		if *ob.Type == trove.OutputUpdateExisting && (ob.MemoryStoreID == nil || *ob.MemoryStoreID == "") {
			return trove.Errorf(trove.EINVALID, "output_behavior.memory_store_id is required with update_existing")
		}
		if ob.MemoryStoreID != nil {
			p.OutputStoreID = *ob.MemoryStoreID
		}
		if p.OutputBehavior == "" {
			return trove.Errorf(trove.EINVALID, "output_behavior.type must be \"create_new\" or \"update_existing\"")
		}
	}
	d, err := s.dreams.CreateDream(r.Context(), p)
	if err != nil {
		return err
	}
	return s.ok(w, dreamToWire(d))
}

func (s *Server) getDream(w http.ResponseWriter, r *http.Request) error {
	d, err := s.dreams.GetDream(r.Context(), r.PathValue("dream_id"))
	if err != nil {
		return err
	}
	return s.ok(w, dreamToWire(d))
}

func (s *Server) listDreams(w http.ResponseWriter, r *http.Request) error {
	q := queryOf(w, r)
	limit, err := queryLimit(q)
	if err != nil {
		return err
	}
	arch, err := queryBool(q, "include_archived")
	if err != nil {
		return err
	}
	p := trove.ListDreamsParams{Limit: limit, Cursor: q.Get("page"), IncludeArchived: arch}
	for _, name := range []string{"statuses[]", "statuses"} {
		for _, v := range q[name] {
			p.Statuses = append(p.Statuses, trove.DreamStatus(v))
		}
	}
	for _, b := range []struct {
		name string
		dst  **time.Time
	}{{"created_at[gt]", &p.CreatedAfter}, {"created_at[lt]", &p.CreatedBefore}} {
		v := q.Get(b.name)
		if v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return trove.Errorf(trove.EINVALID, "%s must be an RFC 3339 timestamp, got %q", b.name, v)
		}
		t = t.UTC()
		*b.dst = &t
	}
	page, err := s.dreams.ListDreams(r.Context(), p)
	if err != nil {
		return err
	}
	out := wirePage[wireDream]{Data: make([]wireDream, len(page.Data)), NextPage: nextPage(page.NextPage)}
	for i := range page.Data {
		out.Data[i] = dreamToWire(&page.Data[i])
	}
	return s.ok(w, &out)
}

func (s *Server) cancelDream(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	d, err := s.dreams.CancelDream(r.Context(), r.PathValue("dream_id"))
	if err != nil {
		return err
	}
	return s.ok(w, dreamToWire(d))
}

func (s *Server) archiveDream(w http.ResponseWriter, r *http.Request) error {
	if err := s.decodeBody(w, r, &struct{}{}, true); err != nil {
		return err
	}
	d, err := s.dreams.ArchiveDream(r.Context(), r.PathValue("dream_id"))
	if err != nil {
		return err
	}
	return s.ok(w, dreamToWire(d))
}
