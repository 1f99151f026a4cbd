package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

// errTurnOver stops following once the session has answered.
var errTurnOver = errors.New("turn over")

// newSessionChatCmd is trove sessions chat: send a user message to a
// managed session and print the conversation as it streams, until the
// session goes idle (its turn ended) or is terminated.
func newSessionChatCmd(c *clientCmd) *cobra.Command {
	return &cobra.Command{
		Use:   "chat SESSION [MESSAGE]",
		Short: "Send a message to a managed session and print the conversation until it goes idle (MESSAGE, or stdin)",
		Long: "Sends MESSAGE (or standard input) as a user.message and prints the session's events as a conversation " +
			"(-o json: the raw events, one JSON object a line) until the session goes idle with its turn ended " +
			"(end_turn, retries_exhausted, budget_reached, refusal) or is terminated.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := chatText(c.e.stdin, args)
			if err != nil {
				return err
			}
			return c.withConn(cmd, func(k *conn) error { return c.chat(k, args[0], text) })
		},
	}
}

// chatText is the message of sessions chat: args[1], else standard input
// (up to 1 MiB, trailing newlines dropped); a usage error when it is blank.
func chatText(stdin io.Reader, args []string) (string, error) {
	text := ""
	if len(args) == 2 {
		text = args[1]
	} else {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20))
		if err != nil {
			return "", err
		}
		text = strings.TrimRight(string(b), "\n")
	}
	if strings.TrimSpace(text) == "" {
		return "", usageError("sessions chat: the message is empty (give MESSAGE or pipe it on stdin)")
	}
	return text, nil
}

// chat sends text to the managed session id and prints its events until
// its turn is over.
func (c *clientCmd) chat(k *conn, id, text string) error {
	es, ok := k.svc.(trove.EventService)
	if !ok {
		return fmt.Errorf("this target has no session events")
	}
	se, err := k.svc.(trove.SessionService).GetSession(k.ctx, id)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return trove.Errorf(trove.ENOTFOUND, "no session %s (see trove sessions list)", id)
	}
	if err != nil {
		return err
	}
	if se.Managed == nil {
		return fmt.Errorf("session %s has no agent to chat with (create one with trove sessions create --agent … --environment …)", id)
	}
	// Follow from before the message, so nothing the loop answers
	// can slip between the send and the first read.
	start, err := lastSeq(k.ctx, es, id)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": text}}})
	if _, err := es.AppendEvents(k.ctx, id, []trove.NewSessionEvent{{Type: trove.EventUserMessage, Body: string(body)}}); err != nil {
		return err
	}
	err = followEvents(k.ctx, k.svc, id, start, func(e trove.SessionEvent) error {
		c.printChatEvent(e)
		if turnOver(e) {
			return errTurnOver
		}
		return nil
	})
	if errors.Is(err, errTurnOver) {
		return nil
	}
	return err
}

// printChatEvent prints e as a line of the conversation, or with -o json
// as the raw event.
func (c *clientCmd) printChatEvent(e trove.SessionEvent) {
	out := c.e.stdout
	if c.json() {
		m := map[string]any{}
		_ = json.Unmarshal([]byte(e.Body), &m)
		m["id"], m["type"], m["processed_at"] = e.ID, e.Type, fmtTime(e.ProcessedAt)
		b, _ := json.Marshal(m)
		fmt.Fprintf(out, "%s\n", b)
	} else if line := chatLine(e); line != "" {
		fmt.Fprintln(out, line)
	}
}

// lastSeq is the Seq of the session's newest event (0: none).
func lastSeq(ctx context.Context, es trove.EventService, id string) (int64, error) {
	page, err := es.ListEvents(ctx, id, trove.ListEventsParams{Order: "desc", Limit: 1})
	if err != nil {
		return 0, err
	}
	if len(page.Data) == 0 {
		return 0, nil
	}
	if s := page.Data[0].Seq; s > 0 {
		return s, nil
	}
	// Over HTTP the listing carries no Seq: count the transcript.
	var n int64
	for page, err := range trove.Pages(ctx, func(ctx context.Context, cursor string) (*trove.Page[trove.SessionEvent], error) {
		return es.ListEvents(ctx, id, trove.ListEventsParams{Limit: 100, Cursor: cursor})
	}) {
		if err != nil {
			return 0, err
		}
		n += int64(len(page.Data))
	}
	return n, nil
}

// followEvents calls fn with each event after Seq after, exactly once, in
// order: the server's event stream over HTTP, WaitEvents and ListEvents on
// a local database.
func followEvents(ctx context.Context, svc trove.Services, id string, after int64, fn func(trove.SessionEvent) error) error {
	if cl, ok := svc.(*httpapi.Client); ok {
		return cl.FollowEvents(ctx, id, after, fn)
	}
	es, ok1 := svc.(trove.EventService)
	w, ok2 := svc.(trove.EventWaiter)
	if !ok1 || !ok2 {
		return fmt.Errorf("this target cannot follow a session's events")
	}
	for {
		page, err := es.ListEvents(ctx, id, trove.ListEventsParams{AfterSeq: after, Limit: 100})
		if err != nil {
			return err
		}
		for _, e := range page.Data {
			if err := fn(e); err != nil {
				return err
			}
			after = e.Seq
		}
		if page.NextPage != "" {
			continue
		}
		head, err := w.WaitEvents(ctx, id, after)
		if err != nil {
			return err
		}
		if head <= after {
			return nil // the session ended
		}
	}
}

// turnOver reports whether e ends the conversation's turn: idle with a
// stop reason other than requires_action, or terminated.
func turnOver(e trove.SessionEvent) bool {
	switch e.Type {
	case trove.EventSessionStatusTerminated, trove.EventSessionDeleted:
		return true
	case trove.EventSessionStatusIdle:
		var b struct {
			StopReason struct {
				Type string `json:"type"`
			} `json:"stop_reason"`
		}
		_ = json.Unmarshal([]byte(e.Body), &b)
		return b.StopReason.Type != "requires_action"
	}
	return false
}

// chatLine renders one event for people ("" for events not shown).
func chatLine(e trove.SessionEvent) string {
	var b struct {
		Content    json.RawMessage `json:"content"`
		Name       string          `json:"name"`
		Input      json.RawMessage `json:"input"`
		IsError    bool            `json:"is_error"`
		StopReason struct {
			Type string `json:"type"`
		} `json:"stop_reason"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(e.Body), &b)
	switch e.Type {
	case trove.EventUserMessage:
		return "you: " + blocksText(b.Content)
	case trove.EventAgentMessage:
		return "agent: " + blocksText(b.Content)
	case trove.EventAgentThinking:
		return "  (thinking)"
	case trove.EventAgentToolUse, trove.EventAgentCustomToolUse:
		return fmt.Sprintf("  → %s %s", b.Name, truncateText(string(b.Input), 200))
	case trove.EventUserToolResult, trove.EventAgentToolResult, trove.EventUserCustomToolResult:
		mark := "←"
		if b.IsError {
			mark = "← error:"
		}
		return fmt.Sprintf("  %s %s", mark, truncateText(blocksText(b.Content), 200))
	case trove.EventUserInterrupt:
		return "[interrupted]"
	case trove.EventSessionStatusRunning:
		return "[running]"
	case trove.EventSessionStatusIdle:
		return "[idle: " + b.StopReason.Type + "]"
	case trove.EventSessionStatusRescheduled:
		return "[rescheduling]"
	case trove.EventSessionStatusTerminated:
		return "[terminated]"
	case trove.EventSessionError:
		return "error: " + b.Error.Message
	}
	return ""
}

// blocksText joins the text of content blocks; other blocks are named.
func blocksText(raw json.RawMessage) string {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	parts := make([]string, 0, len(blocks))
	for _, bl := range blocks {
		if bl.Type == "text" {
			parts = append(parts, bl.Text)
		} else {
			parts = append(parts, "["+bl.Type+"]")
		}
	}
	return strings.Join(parts, " ")
}
