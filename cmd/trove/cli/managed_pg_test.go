package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trovehq/trove/internal/skipnote"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/internal/pgtest"
)

// pgNode is one of two trove serve processes on one PostgreSQL schema.
type pgNode struct {
	name string
	// claudeKey is the node's Anthropic API key: the scripted model tells
	// the two nodes' requests apart by it.
	claudeKey string
	url       string
	cmd       *exec.Cmd
	logPath   string
}

// pgManaged is two trove serve nodes on one PostgreSQL schema behind a
// front proxy (what a load balancer is to a client): the test's SDK, its
// event stream and the SDK's EnvironmentWorker all talk to the proxy, which
// forwards to one node and, when that node is killed, to the other.
type pgManaged struct {
	*managed
	nodes [2]*pgNode
	front atomic.Pointer[pgNode]
	runs  toolRuns
	db    string
	// leaseAtKill says who held the session run's lease at the kill (for
	// the log: it varies with timing at most points).
	leaseAtKill string
}

// runLease says who holds the session run's job lease (the jobs table
// has one row: this test's one session).
func (p *pgManaged) runLease(t *testing.T, victim *pgNode) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, p.db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var owner string
	if err := c.QueryRow(ctx, "SELECT lease_owner FROM jobs WHERE kind = 'session_run'").Scan(&owner); err != nil {
		t.Fatalf("reading the session run's job: %v", err)
	}
	switch {
	case owner == "":
		return "nobody"
	case strings.Contains(owner, fmt.Sprintf("-%d-", victim.cmd.Process.Pid)):
		return "the killed node"
	default:
		return "the other node"
	}
}

// newManagedPG starts nodes A and B on a fresh schema (A first: it creates
// the first API key), the front proxy on A, and provisions the agent,
// environment and store through it. arm, before anything starts, may
// change the model's turns and set the worker's hooks.
func newManagedPG(t *testing.T, turns func(m *managed) []claudetest.Turn, arm func(p *pgManaged, turns []claudetest.Turn)) *pgManaged {
	t.Helper()
	dbURL := pgtest.SchemaURL(t)
	p := &pgManaged{managed: prepareManaged(t), db: dbURL}
	m := p.managed
	ts := turns(m)
	arm(p, ts)
	m.claude = claudetest.New(t, ts...)
	m.claude.AnswerByPosition()
	for i, name := range []string{"A", "B"} {
		p.nodes[i] = p.startNode(t, name, dbURL)
	}
	b, err := os.ReadFile(filepath.Join(m.data, "api_key"))
	if err != nil {
		t.Fatalf("node A saved no first API key: %v", err)
	}
	m.key = strings.TrimSpace(string(b))
	p.front.Store(p.nodes[0])
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			u, _ := url.Parse(p.front.Load().url)
			r.SetURL(u)
		},
		FlushInterval: -1, // event streams pass at once
		ErrorLog:      log.New(io.Discard, "", 0),
	}
	proxy := httptest.NewServer(rp)
	t.Cleanup(func() { proxy.CloseClientConnections(); proxy.Close() })
	m.url = proxy.URL
	m.wrapTool = func(tl anthropic.BetaTool) anthropic.BetaTool { return &countedTool{BetaTool: tl, r: &p.runs} }
	m.provision(t)
	return p
}

// startNode starts trove serve on the schema with the session loop's short
// lease (2 s, heartbeat 200 ms); its log goes to a file shown when the test
// fails. Node A's data directory is m.data (where the first key is saved).
func (p *pgManaged) startNode(t *testing.T, name, dbURL string) *pgNode {
	t.Helper()
	n := &pgNode{name: name, claudeKey: "sk-ant-node-" + strings.ToLower(name), logPath: filepath.Join(t.TempDir(), "serve.log")}
	data := p.data
	if name != "A" {
		data = t.TempDir()
	}
	logf, err := os.Create(n.logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.bin, "serve", "--data", data, "--addr", "127.0.0.1:0", "--database", dbURL,
		"--anthropic-api-key", n.claudeKey, "--anthropic-base-url", p.claude.URL,
		"--session-lease", "2s", "--session-heartbeat", "200ms")
	cmd.Env = append(os.Environ(), "TROVE_DATA=", "TROVE_DATABASE=")
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.cmd = cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(n.logPath)
			if len(b) > 8000 {
				b = b[len(b)-8000:]
			}
			t.Logf("node %s's log (tail):\n%s", name, b)
		}
	})
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if mm := listenRE.FindStringSubmatch(sc.Text()); mm != nil {
			go io.Copy(io.Discard, stdout)
			n.url = mm[1]
			return n
		}
	}
	b, _ := os.ReadFile(n.logPath)
	t.Fatalf("node %s printed no address:\n%s", name, b)
	return nil
}

func (p *pgManaged) nodeByClaudeKey(t *testing.T, key string) *pgNode {
	t.Helper()
	for _, n := range p.nodes {
		if n.claudeKey == key {
			return n
		}
	}
	t.Fatalf("a model request with the key %q, from no node", key)
	return nil
}

func (p *pgManaged) other(n *pgNode) *pgNode {
	if p.nodes[0] == n {
		return p.nodes[1]
	}
	return p.nodes[0]
}

// kill9 lists the transcript through victim (what it had committed), turns
// the front proxy to the other node, kill -9s victim and returns the
// listing and the time of the kill.
func (p *pgManaged) kill9(t *testing.T, victim *pgNode, sessionID string) ([]anthropic.BetaManagedAgentsSessionEventUnion, time.Time) {
	t.Helper()
	direct := anthropic.NewClient(option.WithBaseURL(victim.url), option.WithAPIKey(p.key), option.WithMaxRetries(0))
	pager := direct.Beta.Sessions.Events.ListAutoPaging(context.Background(), sessionID, anthropic.BetaSessionEventListParams{Limit: anthropic.Int(100)})
	var before []anthropic.BetaManagedAgentsSessionEventUnion
	for pager.Next() {
		before = append(before, pager.Current())
	}
	if err := pager.Err(); err != nil {
		t.Fatalf("listing through node %s before the kill: %v", victim.name, err)
	}
	p.front.Store(p.other(victim))
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	victim.cmd.Wait()
	p.leaseAtKill = p.runLease(t, victim)
	return before, time.Now()
}

// toolRuns counts the worker's tool executions by tool name; hook, when
// set, is called before (done false) and after (done true) each one.
type toolRuns struct {
	mu   sync.Mutex
	n    map[string]int
	hook func(name string, done bool)
}

func (r *toolRuns) counts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.n {
		out[k] = v
	}
	return out
}

// countedTool is a worker's toolset tool whose executions toolRuns counts.
type countedTool struct {
	anthropic.BetaTool
	r *toolRuns
}

func (t *countedTool) Execute(ctx context.Context, input json.RawMessage) ([]anthropic.BetaToolResultBlockParamContentUnion, error) {
	name := t.Name()
	t.r.mu.Lock()
	if t.r.n == nil {
		t.r.n = map[string]int{}
	}
	t.r.n[name]++
	hook := t.r.hook
	t.r.mu.Unlock()
	if hook != nil {
		hook(name, false)
	}
	out, err := t.BetaTool.Execute(ctx, input)
	if hook != nil {
		hook(name, true)
	}
	return out, err
}

func (t *countedTool) Close() error {
	if c, ok := t.BetaTool.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// gate is a point of the turn: the first arrival closes reached and waits
// for release (open).
type gate struct {
	once, opened     sync.Once
	reached, release chan struct{}
}

// newGate returns a gate that t's cleanup opens.
func newGate(t *testing.T) *gate {
	g := &gate{reached: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.opened.Do(func() { close(g.release) }) }

func (g *gate) pass() {
	first := false
	g.once.Do(func() { close(g.reached); first = true })
	if first {
		<-g.release
	}
}

func (g *gate) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case <-g.reached:
	case <-time.After(60 * time.Second):
		t.Fatalf("the turn never reached %s", what)
	}
}

// streamed is what follow read: the events, and err when the stream
// ended before the turn did.
type streamed struct {
	events []sseEvent
	err    error
}

// sseEvent is one event of the raw event stream.
type sseEvent struct {
	seq        int64
	id, typ    string
	stopReason string
}

// follow reads the session's event stream (GET …/events/stream) through
// the front proxy from now until a session.status_idle that ends the turn,
// reconnecting with Last-Event-ID (the seq of the last event it got)
// whenever the stream breaks, as a client does when its node dies. The
// first connection is open when follow returns; the channel gets the
// events read and why the stream ended early, if it did.
func (p *pgManaged) follow(t *testing.T, sessionID string) <-chan streamed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	connect := func(last int64) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/v1/sessions/"+sessionID+"/events/stream", nil)
		req.Header.Set("Authorization", "Bearer "+p.key)
		req.Header.Set("anthropic-beta", "managed-agents-2026-04-01")
		req.Header.Set("Accept", "text/event-stream")
		if last > 0 {
			req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
		}
		res, err := http.DefaultClient.Do(req)
		if err == nil && res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			return nil, fmt.Errorf("stream: %d %s", res.StatusCode, b)
		}
		return res, err
	}
	res, err := connect(0)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	out := make(chan streamed, 1)
	finished := make(chan struct{})
	t.Cleanup(func() { cancel(); <-finished })
	go func() {
		defer close(finished)
		var got []sseEvent
		var last int64
		for {
			done, err := readSSE(res.Body, func(e sseEvent) bool {
				got = append(got, e)
				last = e.seq
				return e.typ == "session.status_idle" && e.stopReason != "requires_action"
			})
			res.Body.Close()
			if done {
				out <- streamed{events: got}
				return
			}
			// The stream broke (its node died): reconnect after the last
			// event seen, polling until the front answers.
			for {
				if ctx.Err() != nil {
					out <- streamed{got, fmt.Errorf("the stream never reached the turn's end (last error %v)", err)}
					return
				}
				if res, err = connect(last); err == nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return out
}

// readSSE reads server-sent events, calling each until it returns true
// (done).
func readSSE(r io.Reader, each func(sseEvent) bool) (done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var e sseEvent
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data.Len() == 0 {
				continue
			}
			var body struct {
				ID         string `json:"id"`
				Type       string `json:"type"`
				StopReason struct {
					Type string `json:"type"`
				} `json:"stop_reason"`
			}
			if err := json.Unmarshal([]byte(data.String()), &body); err != nil {
				return false, fmt.Errorf("event data %q: %v", data.String(), err)
			}
			e.id, e.typ, e.stopReason = body.ID, body.Type, body.StopReason.Type
			if each(e) {
				return true, nil
			}
			e, data = sseEvent{}, strings.Builder{}
		case strings.HasPrefix(line, "id:"):
			e.seq, _ = strconv.ParseInt(strings.TrimSpace(line[3:]), 10, 64)
		case strings.HasPrefix(line, "data:"):
			data.WriteString(strings.TrimSpace(line[5:]))
		}
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, io.ErrUnexpectedEOF
}

// TestLongManagedSessionPostgresTakeover: two trove serve nodes on one
// PostgreSQL database; a managed session's turn (read the seeded memory,
// write learned.md, answer) with the SDK's EnvironmentWorker; kill -9 of a
// node at a point of the turn while the other, already running, takes the
// run over through the jobs lease once it has expired. Each time: the turn
// completes; the worker ran each tool call once and the store holds the
// write once; the transcript holds every event once, everything committed
// before the kill among them, and a client's stream that reconnected
// across the kill got exactly the transcript; the model was asked again
// only for the answer the kill cut, never for one already stored.
func TestLongManagedSessionPostgresTakeover(t *testing.T) {
	skipnote.Long(t)
	t.Parallel()
	type point struct {
		name string
		// arm sets up the gate (on the model, a tool or the worker's
		// result post) before the message is sent.
		arm func(p *pgManaged, g *gate, turns []claudetest.Turn)
		// victim picks the node to kill once the gate is reached.
		victim func(t *testing.T, p *pgManaged) *pgNode
		// storedAtKill is how many model answers the transcript holds at
		// the kill; cut: the kill cuts a model request (the victim's
		// request for the next answer).
		storedAtKill int
		cut          bool
		// maybeCut: the victim may or may not have asked for the next
		// answer before the kill (the survivor may have taken the run
		// first); if it did, the kill cut the request.
		maybeCut bool
	}
	lastRequester := func(t *testing.T, p *pgManaged) *pgNode {
		reqs := p.claude.Requests()
		return p.nodeByClaudeKey(t, reqs[len(reqs)-1].APIKey)
	}
	front := func(t *testing.T, p *pgManaged) *pgNode { return p.front.Load() }
	holdModel := func(pos int) func(p *pgManaged, g *gate, turns []claudetest.Turn) {
		return func(p *pgManaged, g *gate, turns []claudetest.Turn) {
			turns[pos].Hold, turns[pos].Reached = g.release, g.reached
		}
	}
	points := []point{
		{
			name:         "while the model request is in flight",
			arm:          holdModel(1),
			victim:       lastRequester,
			storedAtKill: 1, cut: true,
		},
		{
			name: "after the answer is stored, before its tool runs",
			arm: func(p *pgManaged, g *gate, _ []claudetest.Turn) {
				p.runs.hook = func(name string, done bool) {
					if name == "write" && !done {
						g.pass()
					}
				}
			},
			victim:       lastRequester, // the node that stored the write's tool use
			storedAtKill: 2,
		},
		{
			name: "while the worker runs a tool",
			arm: func(p *pgManaged, g *gate, _ []claudetest.Turn) {
				p.runs.hook = func(name string, done bool) {
					if name == "write" && done {
						g.pass() // written, its result not yet posted
					}
				}
			},
			victim:       front, // the worker's node
			storedAtKill: 2,
		},
		{
			name: "after the tool result is posted",
			arm: func(p *pgManaged, g *gate, turns []claudetest.Turn) {
				// The next model request waits for the kill, so a request
				// the killed node made is cut, never answered.
				turns[2].Hold = g.release
				var results atomic.Int32
				p.workerMiddleware = func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
					result := false
					if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/events") && req.GetBody != nil {
						if rc, err := req.GetBody(); err == nil {
							b, _ := io.ReadAll(rc)
							rc.Close()
							result = strings.Contains(string(b), `"user.tool_result"`)
						}
					}
					res, err := next(req)
					// The second result (the write's) is stored: stop here.
					if result && err == nil && res.StatusCode/100 == 2 && results.Add(1) == 2 {
						g.pass()
					}
					return res, err
				}
			},
			victim:       front, // the node that took the result (and woke the run)
			storedAtKill: 2, maybeCut: true,
		},
	}
	for _, pt := range points {
		t.Run(pt.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(t)
			p := newManagedPG(t, learnTurns, func(p *pgManaged, turns []claudetest.Turn) { pt.arm(p, g, turns) })
			se := p.session(t, anthropic.BetaManagedAgentsMemoryStoreResourceParamAccessReadWrite)
			p.worker(t)
			n0 := len(p.allEvents(t, se.ID))
			stream := p.follow(t, se.ID)
			p.say(t, se.ID, "Keep a note.")
			g.wait(t, pt.name)
			victim := pt.victim(t, p)
			survivor := p.other(victim)
			before, killedAt := p.kill9(t, victim, se.ID)
			g.open()
			evs := p.waitTurnEnd(t, se.ID)
			st := <-stream
			if st.err != nil {
				t.Error(st.err)
			}

			// The kill came where it was meant to.
			stored := 0
			for _, ev := range before {
				if ev.Type == "span.model_request_end" && !ev.IsError {
					stored++
				}
			}
			if stored != pt.storedAtKill {
				t.Errorf("node %s had stored %d model answers at the kill, want %d", victim.name, stored, pt.storedAtKill)
			}
			if pt.cut && p.leaseAtKill != "the killed node" {
				t.Errorf("the run's lease at the kill was held by %s, not by node %s, which was asking the model", p.leaseAtKill, victim.name)
			}

			// Every event once; what was committed before the kill kept, in
			// its place; the stream across the kill gave exactly the rest.
			var ids []string
			seen := map[string]bool{}
			count := map[string]int{}
			for _, ev := range evs {
				if seen[ev.ID] {
					t.Errorf("event %s (%s) twice", ev.ID, ev.Type)
				}
				seen[ev.ID] = true
				ids = append(ids, ev.ID)
				count[ev.Type]++
			}
			var beforeIDs []string
			for _, ev := range before {
				beforeIDs = append(beforeIDs, ev.ID)
			}
			if len(beforeIDs) > len(ids) || !cmp.Equal(ids[:len(beforeIDs)], beforeIDs) {
				t.Errorf("the transcript after the kill does not start with the %d events node %s had:\n%s", len(beforeIDs), victim.name, cmp.Diff(beforeIDs, ids))
			}
			var streamedIDs []string
			var lastSeq int64
			for _, e := range st.events {
				streamedIDs = append(streamedIDs, e.id)
				if e.seq <= lastSeq {
					t.Errorf("stream: seq %d after %d", e.seq, lastSeq)
				}
				lastSeq = e.seq
			}
			if n0 > len(ids) || !cmp.Equal(streamedIDs, ids[n0:]) {
				t.Errorf("the stream across the kill differs from the transcript (-streamed +listed):\n%s", cmp.Diff(streamedIDs, ids[min(n0, len(ids)):]))
			}
			want := map[string]int{
				"user.message": 1, "session.status_running": 1, "span.model_request_start": 3, "span.model_request_end": 3,
				"agent.tool_use": 2, "user.tool_result": 2, "agent.message": 1, "session.status_idle": 1,
			}
			for typ, n := range count {
				if _, ok := want[typ]; !ok && n > 0 {
					want[typ] = 0 // an unexpected type shows in the diff
				}
			}
			if d := cmp.Diff(want, count); d != "" {
				t.Errorf("events by type (-want +got):\n%s", d)
			}
			answered := map[string]int{}
			for _, ev := range evs {
				if ev.Type == "user.tool_result" {
					answered[ev.ToolUseID]++
				}
			}
			for _, ev := range evs {
				if ev.Type == "agent.tool_use" && answered[ev.ID] != 1 {
					t.Errorf("tool use %s (%s) has %d results", ev.ID, ev.Name, answered[ev.ID])
				}
			}

			// Each tool call ran once at the worker; the store holds the
			// write once.
			if d := cmp.Diff(map[string]int{"read": 1, "write": 1}, p.runs.counts()); d != "" {
				t.Errorf("tool executions at the worker (-want +got):\n%s", d)
			}
			mem := p.waitMemory(t, "/learned.md")
			if mem.Content != "Tuesdays: green sky.\n" {
				t.Errorf("learned.md = %q", mem.Content)
			}
			vers := p.sdk.Beta.MemoryStores.MemoryVersions.ListAutoPaging(context.Background(), p.storeID, anthropic.BetaMemoryStoreMemoryVersionListParams{MemoryID: anthropic.String(mem.ID)})
			nv := 0
			for vers.Next() {
				nv++
			}
			if err := vers.Err(); err != nil || nv != 1 {
				t.Errorf("learned.md has %d versions (%v), want 1", nv, err)
			}

			// The model: each answer stored before the kill asked for once,
			// by either node before it; the next ones asked for once by the
			// survivor, and again only where the kill cut the victim's
			// request.
			type ask struct {
				node *pgNode
				pre  bool
			}
			byPos := map[int][]ask{}
			for _, r := range p.claude.Requests() {
				pos := requestsByPosition([]claudetest.Request{r})
				for n := range pos {
					byPos[n] = append(byPos[n], ask{p.nodeByClaudeKey(t, r.APIKey), r.At.Before(killedAt)})
				}
			}
			for pos, asks := range byPos {
				var byVictim, bySurvivor, afterKill int
				for _, a := range asks {
					if a.node == victim {
						byVictim++
					} else {
						bySurvivor++
					}
					if !a.pre {
						afterKill++
						if a.node != survivor {
							t.Errorf("position %d asked after the kill by node %s, which was dead", pos, a.node.name)
						}
					}
				}
				switch {
				case pos > 2:
					t.Errorf("the model was asked at position %d: %d times", pos, len(asks))
				case pos < pt.storedAtKill:
					if len(asks) != 1 || afterKill != 0 {
						t.Errorf("position %d (stored before the kill) asked %d times, %d after the kill; want once, before", pos, len(asks), afterKill)
					}
				default:
					wantVictim := 0
					if pos == pt.storedAtKill && pt.cut {
						wantVictim = 1
					}
					okVictim := byVictim == wantVictim || (pos == pt.storedAtKill && pt.maybeCut && byVictim <= 1)
					if bySurvivor != 1 || !okVictim {
						t.Errorf("position %d asked by the victim %s %d times and by the survivor %s %d times; want %d and 1", pos, victim.name, byVictim, survivor.name, bySurvivor, wantVictim)
					}
				}
			}
			if len(byPos) != 3 {
				t.Errorf("the model was asked at %d positions, want 3", len(byPos))
			}
			t.Logf("killed node %s, the run's lease held by %s; model asks by position %v", victim.name, p.leaseAtKill, requestsByPosition(p.claude.Requests()))
		})
	}
}
