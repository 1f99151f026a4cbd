package dreamrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
)

// transcripts renders the input sessions' event logs as text for the
// read_transcript tool. The text is never held whole: the first read of a
// session streams it once to learn its length and keep an index (the
// listing cursor at a rendered offset every markEvery bytes), and each
// read renders the chunk between the marks around its page (kept until
// the next chunk is needed, so a page-by-page read renders each event
// once). So what a dream holds is each session's index (a few hundred
// marks at most) and one chunk (markEvery plus at most eventsPerRead
// events), whatever the transcripts' sizes.
type transcripts struct {
	svc       trove.EventService
	principal *trove.Principal // the dream's creator: reads any session of the workspace
	sessions  []string
	pageBytes int
	index     map[string]*transcriptIndex
	last      *renderedChunk // the chunk last rendered (chunk)
}

// renderedChunk is the text between two marks of a session's index.
type renderedChunk struct {
	session string
	i       int
	text    string
}

// transcriptIndex is where a session's rendered text can be resumed.
type transcriptIndex struct {
	total int              // bytes of the whole text, as of the first read
	marks []transcriptMark // ascending offsets; marks[0] is {0, ""}
}

// transcriptMark: rendering the events listed from cursor starts at
// offset of the text (the header is before the first event, at 0).
type transcriptMark struct {
	offset int
	cursor string
}

const (
	// eventsPerRead is how many events one listing reads (each at most
	// Limits.MaxEventBytes).
	eventsPerRead = 4
	// markEvery is the rendered distance between two index marks.
	markEvery = 64 << 10
)

// transcriptTool is the transcript tool's name.
const transcriptTool = "read_transcript"

func transcriptHeader(sessionID string) string {
	return "# Transcript of session " + sessionID + "\n\n"
}

func eventLine(e *trove.SessionEvent) string {
	return fmt.Sprintf("[%s] %s: %s\n", e.ProcessedAt.UTC().Format(time.RFC3339), e.Type, eventText(e.Body))
}

// walk renders sessionID's text from mark m on, calling fn with each
// piece (the header first when m is the start) and the piece's offset,
// and, when mark is not nil, with every page's start; it stops when fn
// returns false.
func (ts *transcripts) walk(ctx context.Context, sessionID string, m transcriptMark, mark func(transcriptMark), fn func(off int, piece string) bool) error {
	ctx = trove.WithPrincipal(ctx, ts.principal)
	off, cursor := m.offset, m.cursor
	if cursor == "" && off == 0 {
		h := transcriptHeader(sessionID)
		if !fn(0, h) {
			return nil
		}
		off = len(h)
	}
	for {
		if mark != nil {
			mark(transcriptMark{offset: off, cursor: cursor})
		}
		pg, err := ts.svc.ListEvents(ctx, sessionID, trove.ListEventsParams{Limit: eventsPerRead, Cursor: cursor})
		if err != nil {
			return err
		}
		for i := range pg.Data {
			line := eventLine(&pg.Data[i])
			if !fn(off, line) {
				return nil
			}
			off += len(line)
		}
		if cursor = pg.NextPage; cursor == "" {
			return nil
		}
	}
}

// indexOf returns sessionID's index, streaming the transcript once on the
// first call.
func (ts *transcripts) indexOf(ctx context.Context, sessionID string) (*transcriptIndex, error) {
	if ix, ok := ts.index[sessionID]; ok {
		return ix, nil
	}
	ix := &transcriptIndex{marks: []transcriptMark{{}}}
	err := ts.walk(ctx, sessionID, transcriptMark{}, func(m transcriptMark) {
		if m.cursor != "" && m.offset-ix.marks[len(ix.marks)-1].offset >= markEvery {
			ix.marks = append(ix.marks, m)
		}
	}, func(off int, piece string) bool {
		ix.total = off + len(piece)
		return true
	})
	if err != nil {
		return nil, err
	}
	if ts.index == nil {
		ts.index = map[string]*transcriptIndex{}
	}
	ts.index[sessionID] = ix
	return ix, nil
}

// chunk returns the text between marks i and i+1 of sessionID (to the
// end for the last mark). The last chunk rendered is kept, so reading a
// transcript page after page renders each event once; it is the only
// text a reader holds.
func (ts *transcripts) chunk(ctx context.Context, sessionID string, ix *transcriptIndex, i int) (string, error) {
	if c := ts.last; c != nil && c.session == sessionID && c.i == i {
		return c.text, nil
	}
	ts.last = nil
	end := ix.total
	if i+1 < len(ix.marks) {
		end = ix.marks[i+1].offset
	}
	var b strings.Builder
	err := ts.walk(ctx, sessionID, ix.marks[i], nil, func(off int, piece string) bool {
		if off >= end {
			return false
		}
		b.WriteString(piece[:min(len(piece), end-off)])
		return off+len(piece) < end
	})
	if err != nil {
		return "", err
	}
	ts.last = &renderedChunk{session: sessionID, i: i, text: b.String()}
	return ts.last.text, nil
}

// slice returns the text of sessionID in [from, to) (to within the
// index's total), from the chunks that hold it.
func (ts *transcripts) slice(ctx context.Context, sessionID string, ix *transcriptIndex, from, to int) (string, error) {
	i, _ := slices.BinarySearchFunc(ix.marks, from, func(m transcriptMark, off int) int { return m.offset - off - 1 })
	i = max(i-1, 0)
	var b strings.Builder
	for ; i < len(ix.marks); i++ {
		c, err := ts.chunk(ctx, sessionID, ix, i)
		if err != nil {
			return "", err
		}
		start := ix.marks[i].offset
		if lo, hi := max(from-start, 0), min(len(c), to-start); lo < hi {
			b.WriteString(c[lo:hi])
		}
		if start+len(c) >= to {
			break
		}
	}
	return b.String(), nil
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
	ix, err := ts.indexOf(ctx, in.SessionID)
	if err != nil {
		return "Error: the transcript could not be read: " + trove.ErrorMessage(err), true
	}
	total := ix.total
	if in.Offset < 0 || in.Offset > total {
		return fmt.Sprintf("Error: offset must be between 0 and %d", total), true
	}
	// Up to 3 bytes more than the page, to cut it at a UTF-8 boundary.
	to := min(total, in.Offset+ts.pageBytes+utf8.UTFMax-1)
	text, err := ts.slice(ctx, in.SessionID, ix, in.Offset, to)
	if err != nil {
		return "Error: the transcript could not be read: " + trove.ErrorMessage(err), true
	}
	end := min(len(text), ts.pageBytes) // relative to Offset
	for in.Offset+end < total && end > 0 && end < len(text) && !utf8Start(text[end]) {
		end--
	}
	page := text[:end]
	if in.Offset+end < total {
		page += fmt.Sprintf("\n[transcript continues: %d of %d bytes shown; call read_transcript with offset %d for the next page]", in.Offset+end, total, in.Offset+end)
	} else {
		page += fmt.Sprintf("\n[end of transcript: %d bytes]", total)
	}
	return page, false
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
