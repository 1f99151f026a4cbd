package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/console"
	"github.com/trovehq/trove/core"
)

// consoleGet fetches a console page with a console session's cookie.
func consoleGet(t *testing.T, e *env, token, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", e.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: token})
	res, err := plainClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// consolePost posts a console form with a console session's cookie and
// returns the status, the redirect target and the body.
func consolePost(t *testing.T, e *env, token, path string, form url.Values) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", e.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: console.CookieName, Value: token})
	res, err := plainClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// csrfOf reads the CSRF token a console page carries.
func csrfOf(t *testing.T, body string) string {
	t.Helper()
	const m = `name="csrf" value="`
	i := strings.Index(body, m)
	if i < 0 {
		t.Fatalf("no CSRF token in the page:\n%s", body)
	}
	rest := body[i+len(m):]
	return rest[:strings.IndexByte(rest, '"')]
}

// managedSession makes an agent, a self-hosted environment and a managed
// session on e's service.
func managedSession(t *testing.T, e *env, ctx context.Context, title string) (*trove.Session, *trove.Environment) {
	t.Helper()
	ag, err := e.svc.CreateAgent(ctx, trove.CreateAgentParams{Name: `<b>agent</b>`, Model: trove.AgentModelParams{ID: "claude-sonnet-4-6"}, Tools: []trove.AgentToolParams{{Type: trove.ToolAgentToolset}}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := e.svc.CreateEnvironment(ctx, trove.CreateEnvironmentParams{Name: `<i>env</i>`})
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.svc.CreateStore(ctx, trove.CreateStoreParams{Name: "notes"})
	if err != nil {
		t.Fatal(err)
	}
	se, secret, err := e.svc.CreateSession(ctx, trove.CreateSessionParams{Agent: &trove.AgentRef{ID: ag.ID}, EnvironmentID: env.ID, Title: title, Stores: []trove.AttachStoreParams{{StoreID: st.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	// The session writes a memory: a version the page lists, with undo.
	sp, err := e.svc.Authenticate(context.Background(), secret)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateMemory(trove.WithPrincipal(context.Background(), sp), st.ID, trove.CreateMemoryParams{Path: "/learned.md", Content: "x\n"}); err != nil {
		t.Fatal(err)
	}
	return se, env
}

// TestSessionConversation (issue 21 item 9): the session page shows a
// managed session's transcript next to its stores, every event type
// readably and every agent-written text as inert text; a long tool result
// is cut with a note; the newest page links to older events.
func TestSessionConversation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := trove.WithPrincipal(context.Background(), mustPrincipal(t, e))
	se, env := managedSession(t, e, ctx, `<script>alert("title")</script>`)
	hostile := `<script>alert("x")</script><img src=x onerror=alert(1)>`
	if _, err := e.svc.AppendEvents(ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventUserMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, "hello "+hostile)},
	}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("L", 10000)
	if _, err := e.svc.AppendAgentEvents(ctx, se.ID, []trove.NewSessionEvent{
		{Type: trove.EventSessionStatusRunning, Body: `{}`},
		{Type: trove.EventAgentToolUse, Body: fmt.Sprintf(`{"name":%q,"input":{"command":%q}}`, "bash"+hostile, "cat "+hostile)},
		{Type: trove.EventAgentToolResult, Body: fmt.Sprintf(`{"tool_use_id":"sevt_x","content":[{"type":"text","text":%q}]}`, long)},
		{Type: trove.EventAgentMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, "done "+hostile)},
		{Type: trove.EventSessionStatusIdle, Body: `{"stop_reason":{"type":"end_turn"}}`},
	}, core.AgentEventsOptions{}); err != nil {
		t.Fatal(err)
	}
	token, _, err := e.svc.StartConsoleSession(context.Background(), e.key)
	if err != nil {
		t.Fatal(err)
	}
	code, body := consoleGet(t, e, token, "/console/sessions/"+se.ID)
	if code != 200 {
		t.Fatalf("session page: %d\n%s", code, body)
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>agent", "<i>env"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	esc := `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;`
	for _, want := range []string{
		"hello " + esc, "done " + esc, `&#34;command&#34;: &#34;cat &lt;script&gt;alert(\&#34;x\&#34;)&lt;/script&gt;`, `<code class="ev-name">bash` + esc,
		`>User<`, `>Agent<`, `>Tool use<`, `>Tool result<`, `>running<`, `>idle<`, "end_turn",
		"truncated: 10000 bytes in all", `<code>sevt_x</code>`,
		`id="session-status">idle<`, `&lt;script&gt;alert(&#34;title&#34;)`,
		`&lt;b&gt;agent&lt;/b&gt;`, `&lt;i&gt;env&lt;/i&gt;`, env.ID, "version 1",
		"Versions this session wrote", "/learned.md", "Undo its writes since", `name="actor" value="` + se.ID + `"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if code, list := consoleGet(t, e, token, "/console/sessions"); code != 200 || !strings.Contains(list, `&lt;script&gt;alert(&#34;title&#34;)`) || !strings.Contains(list, `<span class="badge ok">idle</span>`) {
		t.Errorf("sessions list: %d\n%s", code, list)
	}
	if strings.Contains(body, long) {
		t.Error("the long tool result is shown whole")
	}
	if strings.Contains(body, "events-older") {
		t.Error("an older link on a short transcript")
	}

	// Paging: 150 more events; the page shows the newest 100 and links to
	// the older ones, which end at the start.
	for i := range 3 {
		var evs []trove.NewSessionEvent
		for j := range 50 {
			evs = append(evs, trove.NewSessionEvent{Type: trove.EventUserMessage, Body: fmt.Sprintf(`{"content":[{"type":"text","text":"m%03d"}]}`, i*50+j)})
		}
		if _, err := e.svc.AppendEvents(ctx, se.ID, evs); err != nil {
			t.Fatal(err)
		}
	}
	_, body = consoleGet(t, e, token, "/console/sessions/"+se.ID)
	if n := strings.Count(body, `class="event `); n != 100 {
		t.Errorf("newest page shows %d events, want 100", n)
	}
	if !strings.Contains(body, "m149") || strings.Contains(body, "m049<") || strings.Contains(body, "hello ") {
		t.Error("the newest page is not the newest 100")
	}
	i := strings.Index(body, `id="events-older"`)
	if i < 0 {
		t.Fatal("no older link")
	}
	href := body[strings.LastIndex(body[:i], `href="`)+6 : i-2]
	href = strings.ReplaceAll(href, "&amp;", "&")
	_, older := consoleGet(t, e, token, href)
	if n := strings.Count(older, `class="event `); n != 56 {
		t.Errorf("older page shows %d events, want 56", n)
	}
	if !strings.Contains(older, "hello ") || !strings.Contains(older, "m049<") || strings.Contains(older, "m050<") || !strings.Contains(older, "start of the transcript") || !strings.Contains(older, `id="events-newest"`) {
		t.Errorf("older page is not the oldest events:\n%s", older)
	}
}
