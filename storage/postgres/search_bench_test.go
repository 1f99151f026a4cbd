package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/storage/postgres"
)

// BenchmarkSearchIndexWrites: the cost of keeping the search index on
// PostgreSQL, as core write throughput with migration 0007's generated
// column and GIN index against the same schema without them (the column
// dropped, which drops the index), 1 KiB contents of 180 words from a
// 5,000-word vocabulary, creates then updates, at 1 and 16 writers, the two
// schemas in alternating rounds of 500 writes; medians (with-ops/s,
// without-ops/s) and with-% = 100 × with / without.
//
//	TROVE_TEST_POSTGRES=… go test -run '^$' -bench SearchIndexWrites -benchtime 1x ./storage/postgres/
func BenchmarkSearchIndexWrites(b *testing.B) {
	const rounds, round = 5, 500
	testURL(b)
	words := strings.Fields(strings.Repeat("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango ", 1))
	text := func(i int) string {
		var sb strings.Builder
		for k := 0; sb.Len() < 1000; k++ {
			fmt.Fprintf(&sb, "%s%d ", words[(i*7+k*13)%len(words)], (i*31+k*17)%5000)
		}
		return sb.String()[:1000]
	}
	for _, op := range []string{"create", "update"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c=%d", op, conc), func(b *testing.B) {
				type side struct {
					svc   *core.Service
					ctx   context.Context
					rates []float64
				}
				open := func(index bool) *side {
					schema := newSchema(b)
					db := openDBOn(b, testURL(b), schema, postgres.Options{MaxConns: 16})
					if !index {
						c := adminConn(b)
						if _, err := c.Exec(context.Background(), "ALTER TABLE "+schema+".memories DROP COLUMN search"); err != nil {
							b.Fatal(err)
						}
					}
					ctx := trove.WithPrincipal(context.Background(), &trove.Principal{WorkspaceID: "wrkspc_bench", Actor: trove.Actor{Type: trove.ActorAPI, APIKeyID: "apikey_bench"}})
					return &side{svc: core.New(db, core.Options{}), ctx: ctx}
				}
				with, without := open(true), open(false)
				b.ResetTimer()
				for n := range b.N * rounds {
					for _, s := range []*side{with, without} {
						st, err := s.svc.CreateStore(s.ctx, trove.CreateStoreParams{Name: fmt.Sprintf("r%d", n)})
						if err != nil {
							b.Fatal(err)
						}
						ids := make([]string, round)
						create := func(_, i int) error {
							m, err := s.svc.CreateMemory(s.ctx, st.ID, trove.CreateMemoryParams{Path: fmt.Sprintf("/g%d/m%05d.md", i%16, i), Content: text(i)})
							if err == nil {
								ids[i] = m.ID
							}
							return err
						}
						if op == "update" {
							if _, _, err := runOps(16, round, create); err != nil {
								b.Fatal(err)
							}
						}
						wall, _, err := runOps(conc, round, func(w, i int) error {
							if op == "create" {
								return create(w, i)
							}
							c := text(round + i)
							_, err := s.svc.UpdateMemory(s.ctx, st.ID, ids[i], trove.UpdateMemoryParams{Content: &c})
							return err
						})
						if err != nil {
							b.Fatal(err)
						}
						s.rates = append(s.rates, float64(round)/wall.Seconds())
					}
				}
				b.StopTimer()
				med := func(xs []float64) float64 { s := slices.Clone(xs); slices.Sort(s); return s[len(s)/2] }
				w, wo := med(with.rates), med(without.rates)
				b.ReportMetric(w, "with-ops/s")
				b.ReportMetric(wo, "without-ops/s")
				b.ReportMetric(100*w/wo, "with-%")
			})
		}
	}
}
