package sessionrun

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/trovehq/trove"
)

// NoteName is the file under the session root holding the prompt note.
const NoteName = "MEMORY_STORES.md"

// Note renders the system-prompt note (sync spec §9.8) from the snapshotted
// attach fields, deterministically: stores[i] is at dirs[i] (len(dirs) ==
// len(stores) > 0, all in one root), maxBytes is the content limit. live: the
// directories are live mounts (FUSEMounter), where the store refuses writes
// at close rather than at a later sync pass.
func Note(stores []trove.SessionStore, dirs []string, maxBytes int, live bool) string {
	var b strings.Builder
	b.WriteString("# Memory\n")
	b.WriteString("Persistent memory stores are mounted as directories. Their contents survive\n")
	b.WriteString("this session. Read them before starting; record durable learnings there.\n")
	for i, s := range stores {
		fmt.Fprintf(&b, "- %q at %s/ (%s)\n", s.Name, dirs[i], s.Access)
		if s.Description != "" {
			fmt.Fprintf(&b, "  Description: %s\n", oneLine(s.Description))
		}
		if s.Instructions != "" {
			fmt.Fprintf(&b, "  Instructions: %s\n", oneLine(s.Instructions))
		}
	}
	parent := filepath.Dir(dirs[0])
	notices := filepath.Join(parent, NoticesName)
	if live {
		fmt.Fprintf(&b, "Only files under a store directory are saved; other paths under %s/\n", parent)
		b.WriteString("are not. Each close of a written file saves it at once. Read-only stores refuse\n")
		b.WriteString("writes (EROFS).")
		fmt.Fprintf(&b, " Files must be UTF-8 text of at most %d kB (%d bytes): a refused\n", maxBytes/1024, maxBytes)
		b.WriteString("write (EFBIG: too large, EILSEQ: not UTF-8) fails at close or fsync and leaves\n")
		b.WriteString("the store unchanged (a refused new file disappears). Shells ignore errors of close,\n")
		b.WriteString("so check the result of close, or run `sync FILE` after writing: it fails for a\n")
		b.WriteString("refused file. If another writer changed a file since you opened it, close fails\n")
		b.WriteString("(ESTALE): the store keeps the other version and yours is saved next to it as\n")
		fmt.Fprintf(&b, "<name>.conflict-….md. Refusals are listed in %s.\n", notices)
		return b.String()
	}
	fmt.Fprintf(&b, "Only files under a store directory are saved; other paths under %s/\n", parent)
	b.WriteString("are not synced. Read-only stores are restored if changed.")
	fmt.Fprintf(&b, " Files must be UTF-8 text up to %d KB.\n", maxBytes/1024)
	b.WriteString("If a sync conflict occurs, the store keeps the other version and yours is saved\n")
	b.WriteString("next to it as <name>.conflict-….md.")
	fmt.Fprintf(&b, " Such events are listed in %s.\n", notices)
	return b.String()
}

// oneLine indents the continuation lines of a field so it stays under its
// bullet.
func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
	return strings.ReplaceAll(s, "\n", "\n    ")
}

// EventsURLEnv names the variable that tells a command run in a session
// where to record its conversation: the session's transcript endpoint
// (POST events there with TROVE_API_KEY; docs/API.md). It is set only when
// the session lives on a server.
const EventsURLEnv = "TROVE_SESSION_EVENTS_URL"

// EventsURL returns the transcript endpoint of sessionID on the server at
// serverURL.
func EventsURL(serverURL, sessionID string) string {
	return strings.TrimRight(serverURL, "/") + "/trove/v1/sessions/" + sessionID + "/events"
}

// Env returns env with the session's variables set (TROVE_API_KEY: the
// session's token, TROVE_SESSION_ID, TROVE_MEMORY_ROOT, TROVE_MEMORY_PROMPT)
// and any earlier value of them, the workspace credential included, removed.
func Env(env []string, token, sessionID, root, note string) []string {
	out := make([]string, 0, len(env)+4)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TROVE_API_KEY", "TROVE_SESSION_ID", "TROVE_MEMORY_ROOT", "TROVE_MEMORY_PROMPT", EventsURLEnv:
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"TROVE_API_KEY="+token,
		"TROVE_SESSION_ID="+sessionID,
		"TROVE_MEMORY_ROOT="+root,
		"TROVE_MEMORY_PROMPT="+note,
	)
}
