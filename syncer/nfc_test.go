package syncer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestNFDNamesAreNormalized: local names not in Unicode NFC (macOS writes
// "é" as "e" and U+0301, NFD), of files and of directories at any depth,
// are synced as their NFC spelling (store paths must be NFC) instead of
// refused: here (Linux, where the two spellings are two names) the local
// entries are renamed to it; the next pass has nothing to do. A name whose
// NFC spelling another file already has is reported, not synced.
func TestNFDNamesAreNormalized(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	en := e.engine("dir", nil)
	dir := en.Dir()
	writeFile(t, dir, "/cafe\u0301/the\u0301/re\u0301sume\u0301.md", "cv\n")
	writeFile(t, dir, "/nai\u0308ve.md", "naive\n")
	writeFile(t, dir, "/plain.md", "plain\n")
	// Both spellings: the NFD one is left alone and reported.
	writeFile(t, dir, "/\u00fcber.md", "nfc\n")
	writeFile(t, dir, "/u\u0308ber.md", "nfd\n")

	rep := e.sync(en)
	want := map[string]string{"/café/thé/résumé.md": "cv\n", "/naïve.md": "naive\n", "/plain.md": "plain\n", "/über.md": "nfc\n"}
	if diff := cmp.Diff(want, e.remote()); diff != "" {
		t.Errorf("store (-want +got):\n%s", diff)
	}
	wantLocal := map[string]string{"/café/thé/résumé.md": "cv\n", "/naïve.md": "naive\n", "/plain.md": "plain\n", "/über.md": "nfc\n", "/u\u0308ber.md": "nfd\n"}
	if diff := cmp.Diff(wantLocal, readDir(t, dir)); diff != "" {
		t.Errorf("local (-want +got):\n%s", diff)
	}
	var reported bool
	for _, p := range rep.Skipped {
		if p.Path == "/u\u0308ber.md" && strings.Contains(p.Reason, "NFC spelling, exists too") {
			reported = true
		}
	}
	if !reported {
		t.Errorf("the NFD twin of /über.md is not reported: %+v", rep.Skipped)
	}

	// Written again under its NFD name (an editor saving on macOS), the
	// file syncs as the same memory.
	if err := os.Remove(filepath.Join(dir, "naïve.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "/nai\u0308ve.md", "naive, edited\n")
	e.sync(en)
	if got := e.remote()["/naïve.md"]; got != "naive, edited\n" {
		t.Errorf("store /naïve.md = %q after the NFD edit", got)
	}
	if rep := e.sync(en); len(rep.Counts) != 0 {
		t.Errorf("a further pass did something: %+v", rep.Counts)
	}
}
