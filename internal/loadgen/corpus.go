package loadgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
)

// The search benchmarks' store (internal/bench on SQLite, storage/postgres
// on PostgreSQL): CorpusMemories memories of CorpusBytes bytes (the store's
// memory limit), written by Corpus.Text, searched with SearchQueries.
const (
	CorpusMemories = 10000
	CorpusBytes    = 1024
)

// vocabulary returns n distinct made-up words ("w0" … are too alike for
// prefixes to mean anything): consonant-vowel syllables.
func vocabulary(n int) []string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteByte(cons[r.IntN(len(cons))])
			b.WriteByte(vows[r.IntN(len(vows))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Corpus writes the search benchmarks' memory texts: about CorpusBytes
// bytes of words drawn from a 5,000-word vocabulary with a Zipf
// distribution (s = 1.1: a few words in most memories, most words in few),
// in sentences. A new Corpus gives the same texts in the same order. Safe
// for concurrent use.
type Corpus struct {
	Vocab []string
	zipf  *rand.Zipf
	mu    sync.Mutex
}

// NewCorpus returns the corpus from its first text.
func NewCorpus() *Corpus {
	r := rand.New(rand.NewPCG(3, 4))
	v := vocabulary(5000)
	return &Corpus{Vocab: v, zipf: rand.NewZipf(r, 1.1, 2, uint64(len(v)-1))}
}

// Text returns the next text, titled with i.
func (c *Corpus) Text(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "# Note %d\n\n", i)
	for b.Len() < CorpusBytes-12 {
		for k := range 8 {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(c.Vocab[c.zipf.Uint64()])
		}
		b.WriteString(".\n")
	}
	s := b.String()
	return s[:min(len(s), CorpusBytes)]
}

// CorpusPath is the path of the corpus's memory i: 50 folders under /notes.
func CorpusPath(i int) string { return fmt.Sprintf("/notes/%02d/note-%05d.md", i%50, i) }

// SearchQueries are the search benchmarks' query classes (trove search
// syntax), by the rank of their words in the Zipf distribution (0 is the
// most common word). In one run of this corpus, the memories (of 10,000)
// each matches: every-memory 10,000 (a word like "the"), frequent 4,352,
// moderate ~400, rare 66, absent 0; prefix (two letters) and phrase (of the
// two most common words) thousands.
func SearchQueries(vocab []string) map[string]string {
	return map[string]string{
		"every-memory": vocab[0],
		"frequent":     vocab[30],
		"moderate":     vocab[300],
		"rare":         vocab[2000],
		"two-words":    vocab[30] + " " + vocab[300],          // an AND of a frequent and a moderate word
		"phrase":       `"` + vocab[0] + " " + vocab[1] + `"`, // two very common words next to each other
		"prefix":       vocab[0][:2],                          // a two-letter prefix: the worst case
		"absent":       "zzzzq",                               // no match
		"path":         "notes " + vocab[300],                 // a path word (every memory's) and a content word
	}
}

// SelectiveClasses are the classes of SearchQueries that match under 10 %
// of the memories.
var SelectiveClasses = []string{"moderate", "rare", "two-words", "absent", "path"}
