//go:build linux

package archive_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trovehq/trove/archive"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/sqlite"
)

// bombEnv names the archive TestImportBombChild imports when it runs as
// TestImportBombsBoundedRSS's child process.
const bombEnv = "TROVE_TEST_IMPORT_BOMB"

// maxImportRSS is the peak resident set an import of a bomb may reach.
const maxImportRSS = 100 << 20

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// writeBomb writes a gzip tar of entries, each name → size bytes from the
// reader open returns, in order.
func writeBomb(t *testing.T, path string, entries []bombEntry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: e.size}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, io.LimitReader(e.r, e.size)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []io.Closer{tw, gz, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

type bombEntry struct {
	name string
	size int64
	r    io.Reader
}

// manifestBomb is a manifest.json with a description of descBytes and n
// versions, streamed: its size is known before it is written.
func manifestBomb(descBytes, n int) (int64, io.Reader) {
	head := `{"format":"trove-archive","format_version":1,"export_id":"export_bomb","store":{"name":"bomb","description":"`
	mid := `"},"memories":[{"path":"/a.md","file":"memories/a.md","content_sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb","content_size_bytes":1}],"versions":[`
	version := `{"id":"memver_x","memory_id":"mem_x","operation":"created","path":"/a.md","content_sha256":null,"content_size_bytes":1,"created_by":{"type":"api_actor","api_key_id":"apikey_x"},"created_at":"2026-12-01T00:00:00Z","redacted":false}`
	var parts []io.Reader
	size := int64(len(head) + descBytes + len(mid) + n*len(version) + max(n-1, 0) + 2)
	parts = append(parts, strings.NewReader(head))
	parts = append(parts, io.LimitReader(repeatByte('a'), int64(descBytes)), strings.NewReader(mid))
	vs := make([]io.Reader, 0, n)
	for i := range n {
		s := version
		if i > 0 {
			s = "," + version
		}
		vs = append(vs, strings.NewReader(s))
	}
	parts = append(parts, io.MultiReader(vs...), strings.NewReader("]}"))
	return size, io.MultiReader(parts...)
}

type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// TestImportBombsBoundedRSS imports archives built to exhaust memory, each
// in a child process (this test binary), and checks that each is refused
// with the child's peak RSS under 100 MiB. Before the fix (e72a11b) the
// three peaked at ~850 MiB, ~10.4 GiB and ~1.1 GiB (issue 22).
func TestImportBombsBoundedRSS(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("builds archives that expand to hundreds of MiB; the race detector multiplies memory and time, so the figure would not be the import's")
	}
	t.Parallel()
	dir := t.TempDir()
	size, manifest := manifestBomb(96<<20, 200_000)
	good := func() (int64, io.Reader) {
		s := `{"format":"trove-archive","format_version":1,"export_id":"export_bomb","store":{"name":"bomb"},"memories":[{"path":"/a.md","file":"memories/a.md","content_sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb","content_size_bytes":1}],"versions":[]}`
		return int64(len(s)), strings.NewReader(s)
	}
	gs, gm := good()
	gs2, gm2 := good()
	bombs := []struct {
		name    string
		entries []bombEntry
		want    string
	}{
		{"24 MiB of zeros", []bombEntry{{"memories/a.md", 24 << 20, zeros{}}, {archive.ManifestName, gs, gm}}, "the limit is 102400 bytes"},
		{"300 MiB entry", []bombEntry{{"memories/a.md", 300 << 20, zeros{}}, {archive.ManifestName, gs2, gm2}}, "the limit is 102400 bytes"},
		{"96 MiB description, 200,000 versions", []bombEntry{{"memories/a.md", 1, strings.NewReader("a")}, {archive.ManifestName, size, manifest}}, "larger than"},
	}
	for _, b := range bombs {
		t.Run(b.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(b.name, " ", "_")+".tar.gz")
			writeBomb(t, p, b.entries)
			fi, _ := os.Stat(p)
			cmd := exec.Command(os.Args[0], "-test.run=^TestImportBombChild$", "-test.v")
			cmd.Env = append(os.Environ(), bombEnv+"="+p)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "REFUSED:") || !strings.Contains(string(out), b.want) {
				t.Fatalf("the import was not refused with %q:\n%s", b.want, out)
			}
			// The child's own VmHWM: the rusage of a child started with
			// CLONE_VM counts the parent's memory too.
			var kb int64
			if i := strings.Index(string(out), "PEAK_RSS_KB: "); i < 0 {
				t.Fatalf("the child did not report its peak RSS:\n%s", out)
			} else {
				fmt.Sscanf(string(out[i:]), "PEAK_RSS_KB: %d", &kb)
			}
			rss := kb << 10
			t.Logf("%s: archive %d bytes, import peak RSS %.1f MiB", b.name, fi.Size(), float64(rss)/(1<<20))
			if rss > maxImportRSS {
				t.Errorf("the import peaked at %.1f MiB, want under %d MiB", float64(rss)/(1<<20), maxImportRSS>>20)
			}
		})
	}
}

// TestImportBombChild is TestImportBombsBoundedRSS's child: it imports the
// archive bombEnv names into a local SQLite database and prints the error.
func TestImportBombChild(t *testing.T) {
	path := os.Getenv(bombEnv)
	if path == "" {
		t.Skip("run by TestImportBombsBoundedRSS")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "trove.db"), sqlite.Options{AutoMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := core.New(db, core.Options{})
	_, err = archive.Import(ctx, svc, path, archive.ImportOptions{})
	if err == nil {
		t.Fatal("the bomb was imported")
	}
	fmt.Printf("REFUSED: %v\n", err)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Printf("PEAK_RSS_KB: %s\n", strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
}
