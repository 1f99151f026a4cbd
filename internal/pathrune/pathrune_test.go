package pathrune

import (
	"testing"
	"unicode"
)

func TestHidden(t *testing.T) {
	tests := []struct {
		name string
		r    rune
		want bool
	}{
		{"space", ' ', false},
		{"letter", 'a', false},
		{"digit", '7', false},
		{"dot", '.', false},
		{"e acute", 'é', false},
		{"CJK", '日', false},
		{"emoji", '😀', false},
		{"combining acute", '\u0301', false}, // visible: it marks the letter before it
		{"no-break space", '\u00a0', true},
		{"en quad", '\u2000', true},
		{"narrow no-break space", '\u202f', true},
		{"ideographic space", '\u3000', true},
		{"ogham space mark", '\u1680', true},
		{"line separator", '\u2028', true},
		{"paragraph separator", '\u2029', true},
		{"tab", '\t', true},
		{"soft hyphen", '\u00ad', true},
		{"combining grapheme joiner", '\u034f', true},
		{"zero width space", '\u200b', true},
		{"zero width joiner", '\u200d', true},
		{"left-to-right mark", '\u200e', true},
		{"right-to-left override", '\u202e', true},
		{"first strong isolate", '\u2068', true},
		{"arabic letter mark", '\u061c', true},
		{"word joiner", '\u2060', true},
		{"reserved default ignorable", '\u2065', true},
		{"variation selector 16", '\ufe0f', true},
		{"mongolian free variation selector", '\u180b', true},
		{"variation selector supplement", '\U000e0100', true},
		{"hangul filler", '\u3164', true},
		{"hangul choseong filler", '\u115f', true},
		{"halfwidth hangul filler", '\uffa0', true},
		{"byte order mark", '\ufeff', true},
		{"tag latin a", '\U000e0041', true},
	}
	for _, tt := range tests {
		if got := Hidden(tt.r); got != tt.want {
			t.Errorf("Hidden(%U %s) = %v, want %v", tt.r, tt.name, got, tt.want)
		}
	}
}

// Every space separator but U+0020 is hidden: none can be told from a plain
// space on screen.
func TestHiddenCoversEverySpace(t *testing.T) {
	for _, rng := range unicode.Zs.R16 {
		for r := rune(rng.Lo); r <= rune(rng.Hi); r += rune(rng.Stride) {
			if r != ' ' && !Hidden(r) {
				t.Errorf("Hidden(%U) = false for a space separator", r)
			}
		}
	}
}
