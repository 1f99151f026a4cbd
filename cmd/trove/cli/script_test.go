package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trovehq/trove/httpapi"
	"github.com/trovehq/trove/internal/claudetest"
	"github.com/trovehq/trove/internal/pgtest"
	"github.com/trovehq/trove/internal/racechild"
)

// TestMain lets the test binary act as the trove command in scripts, and
// stops the private PostgreSQL cluster, if one was started, when the tests
// end (pgtest.Main).
func TestMain(m *testing.M) {
	racechild.Setenv()
	testscript.Main(pgtestRun{m}, map[string]func(){
		"trove": func() { os.Exit(profiled(func() int { return Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr) })) },
	})
}

// profiled runs main, writing a CPU profile of it to
// $TROVE_TEST_CPUPROFILE-<pid>.pprof when that variable is set: how a
// benchmark profiles the trove processes it starts (BenchmarkMCPEdits).
func profiled(main func() int) int {
	prefix := os.Getenv("TROVE_TEST_CPUPROFILE")
	if prefix == "" {
		return main()
	}
	f, err := os.Create(prefix + "-" + strconv.Itoa(os.Getpid()) + ".pprof")
	if err != nil {
		fmt.Fprintln(os.Stderr, "TROVE_TEST_CPUPROFILE:", err)
		return 1
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "TROVE_TEST_CPUPROFILE:", err)
		return 1
	}
	defer pprof.StopCPUProfile()
	return main()
}

// pgtestRun runs the tests through pgtest.Main for testscript.Main.
type pgtestRun struct{ m *testing.M }

func (r pgtestRun) Run() int {
	findTroveBin()
	return pgtest.Main(r.m)
}

// TestScripts runs testdata/script/*.txtar: the CLI as a user drives it,
// against a real trove serve (the serve command below) or a local --data.
//
// Besides testscript's own commands, scripts have:
//
//	serve [ARGS…]         start trove serve on 127.0.0.1:0 with --data $WORK/data
//	                      unless ARGS give --data (in this process, stopped when
//	                      the script ends); sets
//	                      $SERVER to its URL and writes its standard output up to
//	                      the login hint to $WORK/serve.out
//	capture NAME REGEXP   set $NAME to REGEXP's first group in the last stdout
//	mode FILE PERM        the file's permission bits are PERM (octal)
//	api PATH              GET $SERVER/PATH with the key in $WORK/data/api_key and
//	                      the beta header; the body, indented as -o json does,
//	                      becomes stdout
//	claude FILE           start a scripted Messages API (internal/claudetest)
//	                      answering with the JSON list of turns in FILE; sets
//	                      $CLAUDE_URL to its URL
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir: filepath.Join("testdata", "script"),
		Setup: func(env *testscript.Env) error {
			env.Setenv("GORACE", os.Getenv("GORACE")) // racechild: no exit pause
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			env.Setenv("HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("XDG_DATA_HOME", filepath.Join(env.WorkDir, "home", ".local", "share"))
			env.Setenv("XDG_STATE_HOME", filepath.Join(env.WorkDir, "home", ".local", "state"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"serve":   scriptServe,
			"capture": scriptCapture,
			"mode":    scriptMode,
			"api":     scriptAPI,
			"claude":  scriptClaude,
		},
	})
}

func scriptServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! serve")
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var errb syncBuffer
	done := make(chan int, 1)
	argv := []string{"serve", "--addr", "127.0.0.1:0"}
	if !slices.Contains(args, "--data") {
		argv = append(argv, "--data", ts.MkAbs("data"))
	}
	argv = append(argv, args...)
	go func() {
		done <- run(ctx, argv, strings.NewReader(""), pw, &errb)
		pw.Close()
	}()
	var out strings.Builder
	url := ""
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		if after, ok := strings.CutPrefix(line, "trove: listening on "); ok {
			url = strings.Fields(after)[0]
		}
		if strings.Contains(line, "trove login") || (url != "" && !strings.HasPrefix(line, "trove: listening")) {
			break
		}
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain the rest
	ts.Defer(func() {
		cancel()
		<-done
	})
	if url == "" {
		ts.Fatalf("trove serve did not start:\n%s%s", out.String(), errb.String())
	}
	ts.Check(os.WriteFile(ts.MkAbs("serve.out"), []byte(out.String()), 0o644))
	ts.Setenv("SERVER", url)
}

func scriptCapture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: capture NAME REGEXP")
	}
	m := regexp.MustCompile(args[1]).FindStringSubmatch(ts.ReadFile("stdout"))
	if len(m) < 2 {
		ts.Fatalf("capture: %q does not match stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

func scriptMode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: mode FILE PERM")
	}
	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)
	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)
	if got := fi.Mode().Perm(); (uint64(got) == want) == neg {
		ts.Fatalf("mode of %s is %s (want %s%s)", args[0], got, map[bool]string{true: "not ", false: ""}[neg], os.FileMode(want))
	}
}

// scriptAPI is "api PATH" (a GET) or "api METHOD PATH [BODYFILE]": the
// answer's JSON, indented, on stdout; "! api" expects a refusal.
func scriptAPI(ts *testscript.TestScript, neg bool, args []string) {
	method, path, bodyFile := http.MethodGet, "", ""
	switch len(args) {
	case 1:
		path = args[0]
	case 2, 3:
		method, path = args[0], args[1]
		if len(args) == 3 {
			bodyFile = args[2]
		}
	default:
		ts.Fatalf("usage: api [METHOD] PATH [BODYFILE]")
	}
	var body io.Reader
	if bodyFile != "" {
		body = strings.NewReader(ts.ReadFile(bodyFile))
	}
	req, err := http.NewRequest(method, ts.Getenv("SERVER")+path, body)
	ts.Check(err)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(ts.ReadFile("data/api_key")))
	req.Header.Set("anthropic-beta", httpapi.BetaAgentMemory)
	for _, p := range []string{"/v1/agents", "/v1/environments", "/v1/sessions"} {
		if strings.HasPrefix(path, p) {
			req.Header.Set("anthropic-beta", httpapi.BetaManagedAgents)
		}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	ts.Check(err)
	defer res.Body.Close()
	resBody, err := io.ReadAll(res.Body)
	ts.Check(err)
	if (res.StatusCode == http.StatusOK) == neg {
		ts.Fatalf("%s %s: %s\n%s", method, path, res.Status, resBody)
	}
	var out bytes.Buffer
	ts.Check(json.Indent(&out, bytes.TrimSpace(resBody), "", "  "))
	out.WriteByte('\n')
	ts.Stdout().Write(out.Bytes())
}

func scriptClaude(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: claude FILE")
	}
	var turns []claudetest.Turn
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &turns))
	srv := claudetest.Start(turns...)
	ts.Defer(srv.Close)
	ts.Setenv("CLAUDE_URL", srv.URL)
}
