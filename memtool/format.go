package memtool

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// DirSize is the size shown for every directory in a listing. A fixed value
// (the ext4 inode size, "4.0K" as in the seed's example listing) keeps
// listings independent of the host filesystem and of the backend.
const DirSize = 4096

// formatSize renders a byte count the way the memory tool documentation's
// examples do ("4.0K", "1.5K", "5.5K", "1.2M"; du -h style, 1024-based):
//
//   - under 1024 bytes: the exact count and "B" ("0B", "12B", "1023B"; a
//     negative count, which no backend reports, is shown as "0B");
//   - otherwise exactly one decimal and the unit K, M, G or T, rounded half
//     up with integer arithmetic (1024 = "1.0K", 1280 = "1.3K", 1536 =
//     "1.5K", 4096 = "4.0K");
//   - a value that rounds to 1024.0 of a unit is shown as 1.0 of the next
//     one (1048575 = "1.0M", not "1024.0K"); T is the largest unit, so
//     sizes of 1024 TiB and more stay in T.
//
// The TypeScript SDK prints integral values without a decimal ("4K", "1K");
// the seed wins.
func formatSize(b int64) string {
	if b < 1024 {
		return strconv.FormatInt(max(b, 0), 10) + "B"
	}
	const units = "KMGT"
	u := uint64(b)
	i := min((bits.Len64(u)-1)/10, len(units)) // 1..4: the largest unit <= u
	for {
		shift := uint(10 * i)
		div := uint64(1) << shift
		// Tenths of the unit, rounded half up, without overflowing u*10.
		t := (u>>shift)*10 + ((u&(div-1))*10+div/2)>>shift
		if t >= 10240 && i < len(units) {
			i++
			continue
		}
		return strconv.FormatUint(t/10, 10) + "." + strconv.FormatUint(t%10, 10) + units[i-1:i]
	}
}

// compareUTF16 orders strings by UTF-16 code units, like JavaScript's default
// Array.prototype.sort used by the reference implementation.
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// numberLine appends the reference's line prefix: the number right-aligned in
// six columns, then a tab.
func numberLine(sb *strings.Builder, n int, line string) {
	s := strconv.Itoa(n)
	for i := len(s); i < 6; i++ {
		sb.WriteByte(' ')
	}
	sb.WriteString(s)
	sb.WriteByte('\t')
	sb.WriteString(line)
}

// groupThousands renders n with comma separators (999999 -> "999,999").
func groupThousands(n int) string {
	s := strconv.Itoa(n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}

func sortInfos(s []Info) {
	slices.SortFunc(s, func(a, b Info) int { return compareUTF16(a.Name, b.Name) })
}
