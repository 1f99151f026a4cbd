package memtool

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// DirSize is the size shown for every directory in a listing. A fixed value
// (the ext4 inode size the reference prints as "4K") keeps listings
// independent of the host filesystem and of the backend.
const DirSize = 4096

// formatSize renders a byte count like the reference implementation's
// formatFileSize, with exact integer arithmetic: units B, K, M, G (1024-based),
// an integral value printed without decimals, otherwise one decimal rounded
// half up. Sizes of 1 TiB and more are printed in G (the reference prints the
// unit "undefined").
func formatSize(b int64) string {
	if b <= 0 {
		return "0B"
	}
	u := uint64(b)
	i := (bits.Len64(u) - 1) / 10
	if i > 3 {
		i = 3
	}
	div := uint64(1) << (10 * i)
	unit := "BKMG"[i : i+1]
	if u%div == 0 {
		return strconv.FormatUint(u/div, 10) + unit
	}
	t := (u*10 + div/2) / div
	return strconv.FormatUint(t/10, 10) + "." + strconv.FormatUint(t%10, 10) + unit
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
