package memtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trovehq/trove/memtool"
)

// workload generates a deterministic mixed sequence of memory operations
// over a set of live files: 40% view, 20% str_replace, 15% insert,
// 15% create, 5% rename, 5% delete.
type workload struct {
	rng   *rand.Rand
	files []string       // live relative names
	gen   map[string]int // the "gen=N" marker each file holds
	next  int
}

type op struct {
	kind     string
	name     string // relative
	newName  string // rename
	old, new string // str_replace
	text     string // create / insert
}

func newWorkload(seed uint64) *workload {
	return &workload{rng: rand.New(rand.NewPCG(seed, 1)), gen: map[string]int{}}
}

func (w *workload) fresh() string {
	w.next++
	return fmt.Sprintf("dir%02d/note-%06d.md", w.next%10, w.next)
}

func (w *workload) content(name string) string {
	return fmt.Sprintf("# %s\ngen=0\n%s\n", name, strings.Repeat("some remembered fact about the project\n", 10))
}

func (w *workload) pick() string { return w.files[w.rng.IntN(len(w.files))] }

func (w *workload) op() op {
	p := w.rng.IntN(100)
	if len(w.files) < 20 {
		p = 60 // refill with creates
	}
	switch {
	case p < 40:
		return op{kind: "view", name: w.pick()}
	case p < 60:
		n := w.pick()
		g := w.gen[n]
		w.gen[n] = g + 1
		return op{kind: "str_replace", name: n, old: fmt.Sprintf("gen=%d\n", g), new: fmt.Sprintf("gen=%d\n", g+1)}
	case p < 75:
		return op{kind: "insert", name: w.pick(), text: "an inserted line"}
	case p < 90:
		n := w.fresh()
		w.files = append(w.files, n)
		return op{kind: "create", name: n, text: w.content(n)}
	case p < 95:
		i := w.rng.IntN(len(w.files))
		o, n := w.files[i], w.fresh()
		w.files[i] = n
		w.gen[n] = w.gen[o]
		delete(w.gen, o)
		return op{kind: "rename", name: o, newName: n}
	default:
		i := w.rng.IntN(len(w.files))
		n := w.files[i]
		w.files = slices.Delete(w.files, i, i+1)
		delete(w.gen, n)
		return op{kind: "delete", name: n}
	}
}

func (o op) input() []byte {
	m := map[string]any{"command": o.kind, "path": "/memories/" + o.name}
	switch o.kind {
	case "str_replace":
		m["old_str"], m["new_str"] = o.old, o.new
	case "insert":
		m["insert_line"], m["insert_text"] = 1, o.text
	case "create":
		m["file_text"] = o.text
	case "rename":
		m = map[string]any{"command": "rename", "old_path": "/memories/" + o.name, "new_path": "/memories/" + o.newName}
	}
	b, _ := json.Marshal(m)
	return b
}

// rawOS performs the same operation with direct os calls. With durable it
// writes like DirFS does (temp file, fsync, rename, fsync directory).
func rawOS(dir string, o op, durable bool) error {
	p := filepath.Join(dir, o.name)
	write := func(data []byte) error {
		if !durable {
			return os.WriteFile(p, data, 0o600)
		}
		tmp := p + ".tmp"
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		f.Close()
		if err := os.Rename(tmp, p); err != nil {
			return err
		}
		d, err := os.Open(filepath.Dir(p))
		if err != nil {
			return err
		}
		defer d.Close()
		return d.Sync()
	}
	switch o.kind {
	case "view":
		_, err := os.ReadFile(p)
		return err
	case "str_replace":
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return write([]byte(strings.Replace(string(b), o.old, o.new, 1)))
	case "insert":
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s, _, _ := memtool.InsertText(string(b), 1, o.text)
		return write([]byte(s))
	case "create":
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		return write([]byte(o.text))
	case "rename":
		np := filepath.Join(dir, o.newName)
		if err := os.MkdirAll(filepath.Dir(np), 0o700); err != nil {
			return err
		}
		return os.Rename(p, np)
	case "delete":
		return os.RemoveAll(p)
	}
	return nil
}

func reportLatencies(b *testing.B, lat []time.Duration, elapsed time.Duration) {
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(p(0.50), "p50-µs")
	b.ReportMetric(p(0.99), "p99-µs")
}

// BenchmarkMixedWorkload compares the engine on DirFS with the same file
// operations done with plain os calls, in one run. Populates 200 files
// first.
func BenchmarkMixedWorkload(b *testing.B) {
	const initial = 200
	b.Run("engine-dirfs", func(b *testing.B) {
		d, err := memtool.NewDirFS(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		tool := memtool.New(d, memtool.Options{})
		w := newWorkload(1)
		ctx := context.Background()
		for range initial {
			n := w.fresh()
			w.files = append(w.files, n)
			if r := tool.Execute(ctx, op{kind: "create", name: n, text: w.content(n)}.input()); r.IsError {
				b.Fatal(r.String())
			}
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			o := w.op()
			in := o.input()
			t0 := time.Now()
			r := tool.Execute(ctx, in)
			lat = append(lat, time.Since(t0))
			if r.IsError {
				b.Fatalf("%s: %s", in, r.String())
			}
		}
		reportLatencies(b, lat, time.Since(start))
	})
	for _, durable := range []bool{false, true} {
		name := "baseline-os-plain"
		if durable {
			name = "baseline-os-atomic-fsync"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			w := newWorkload(1)
			for range initial {
				n := w.fresh()
				w.files = append(w.files, n)
				if err := rawOS(dir, op{kind: "create", name: n, text: w.content(n)}, durable); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				o := w.op()
				t0 := time.Now()
				err := rawOS(dir, o, durable)
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
			}
			reportLatencies(b, lat, time.Since(start))
		})
	}
}

// BenchmarkMixedWorkloadInterleaved runs the same three variants as
// BenchmarkMixedWorkload, but interleaved call by call (the order rotating
// each iteration), so that the load of a shared machine drifting during the
// run weighs on all of them alike and the ratios are stable:
//
//	go test ./memtool/ -run '^$' -bench MixedWorkloadInterleaved -benchtime 3000x -count 3
//
// ops/s is calls per second of time spent in that variant's calls.
func BenchmarkMixedWorkloadInterleaved(b *testing.B) {
	const initial = 200
	ctx := context.Background()
	d, err := memtool.NewDirFS(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	tool := memtool.New(d, memtool.Options{})
	type variant struct {
		name string
		w    *workload
		run  func(op) error
		lat  []time.Duration
	}
	engine := func(o op) error {
		if r := tool.Execute(ctx, o.input()); r.IsError {
			return fmt.Errorf("%s: %s", o.input(), r.String())
		}
		return nil
	}
	atomicDir, plainDir := b.TempDir(), b.TempDir()
	vs := []*variant{
		{name: "engine-dirfs", run: engine},
		{name: "baseline-os-atomic-fsync", run: func(o op) error { return rawOS(atomicDir, o, true) }},
		{name: "baseline-os-plain", run: func(o op) error { return rawOS(plainDir, o, false) }},
	}
	for _, v := range vs {
		v.w = newWorkload(1)
		for range initial {
			n := v.w.fresh()
			v.w.files = append(v.w.files, n)
			if err := v.run(op{kind: "create", name: n, text: v.w.content(n)}); err != nil {
				b.Fatal(err)
			}
		}
		v.lat = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range vs {
			v := vs[(i+k)%len(vs)]
			o := v.w.op()
			t0 := time.Now()
			err := v.run(o)
			v.lat = append(v.lat, time.Since(t0))
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	opsPerSec := map[string]float64{}
	for _, v := range vs {
		var total time.Duration
		for _, l := range v.lat {
			total += l
		}
		opsPerSec[v.name] = float64(len(v.lat)) / total.Seconds()
		slices.Sort(v.lat)
		b.ReportMetric(opsPerSec[v.name], v.name+"-ops/s")
		b.ReportMetric(float64(v.lat[len(v.lat)/2].Microseconds()), v.name+"-p50-µs")
	}
	b.ReportMetric(opsPerSec["engine-dirfs"]/opsPerSec["baseline-os-atomic-fsync"], "engine/atomic")
	b.ReportMetric(opsPerSec["engine-dirfs"]/opsPerSec["baseline-os-plain"], "engine/plain")
}
