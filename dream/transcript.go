package dream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trovehq/trove"
)

// transcripts renders the input sessions' event logs as text for the
// read_transcript tool, each read once and kept for the dream's run.
type transcripts struct {
	svc       trove.EventService
	principal *trove.Principal // the dream's creator: reads any session of the workspace
	sessions  []string
	pageBytes int
	cache     map[string]string
}

// transcriptTool is the transcript tool's name.
const transcriptTool = "read_transcript"

// render returns the whole transcript of sessionID as text.
func (ts *transcripts) render(ctx context.Context, sessionID string) (string, error) {
	if s, ok := ts.cache[sessionID]; ok {
		return s, nil
	}
	ctx = trove.WithPrincipal(ctx, ts.principal)
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Transcript of session %s\n\n", sessionID)
	cursor := ""
	for {
		pg, err := ts.svc.ListEvents(ctx, sessionID, trove.ListEventsParams{Limit: 100, Cursor: cursor})
		if err != nil {
			return "", err
		}
		for _, e := range pg.Data {
			fmt.Fprintf(&sb, "[%s] %s: %s\n", e.ProcessedAt.UTC().Format(time.RFC3339), e.Type, eventText(e.Body))
		}
		if cursor = pg.NextPage; cursor == "" {
			break
		}
	}
	s := sb.String()
	ts.cache[sessionID] = s
	return s, nil
}

// eventText is the readable part of an event body: its text blocks, a
// tool use's name and input, else the body itself.
func eventText(body string) string {
	var ev struct {
		Content json.RawMessage `json:"content"`
		Name    string          `json:"name"`
		Input   json.RawMessage `json:"input"`
	}
	if json.Unmarshal([]byte(body), &ev) != nil {
		return body
	}
	var parts []string
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(ev.Content, &blocks) == nil {
		for _, b := range blocks {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
	} else {
		var s string
		if json.Unmarshal(ev.Content, &s) == nil && s != "" {
			parts = append(parts, s)
		}
	}
	if ev.Name != "" {
		parts = append(parts, ev.Name+" "+string(ev.Input))
	}
	if len(parts) == 0 {
		return body
	}
	return strings.Join(parts, "\n")
}

// read answers one read_transcript call: pageBytes of the transcript from
// offset (cut at a UTF-8 boundary), with a note saying where the next page
// starts. A session that is not an input of the dream is refused.
func (ts *transcripts) read(ctx context.Context, input json.RawMessage) (string, bool) {
	var in struct {
		SessionID string `json:"session_id"`
		Offset    int    `json:"offset"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return "Error: the input must be {\"session_id\": string, \"offset\": integer}", true
	}
	if !slices.Contains(ts.sessions, in.SessionID) {
		return fmt.Sprintf("Error: %q is not an input session of this dream; the input sessions are %s", in.SessionID, strings.Join(ts.sessions, ", ")), true
	}
	text, err := ts.render(ctx, in.SessionID)
	if err != nil {
		return "Error: the transcript could not be read: " + trove.ErrorMessage(err), true
	}
	if in.Offset < 0 || in.Offset > len(text) {
		return fmt.Sprintf("Error: offset must be between 0 and %d", len(text)), true
	}
	end := min(len(text), in.Offset+ts.pageBytes)
	for end < len(text) && end > in.Offset && !utf8Start(text[end]) {
		end--
	}
	page := text[in.Offset:end]
	if end < len(text) {
		page += fmt.Sprintf("\n[transcript continues: %d of %d bytes shown; call read_transcript with offset %d for the next page]", end, len(text), end)
	} else {
		page += fmt.Sprintf("\n[end of transcript: %d bytes]", len(text))
	}
	return page, false
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
