package apply

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// specTypes are the YAML mappings of a stores.yaml, by their Go type name
// (as the YAML decoder names them), with what a person calls them.
var specTypes = map[string]struct {
	what string
	t    reflect.Type
}{
	"Spec":       {"at the top level", reflect.TypeFor[Spec]()},
	"StoreSpec":  {"in a store", reflect.TypeFor[StoreSpec]()},
	"MemorySpec": {"in a memory", reflect.TypeFor[MemorySpec]()},
}

var (
	reUnknownField = regexp.MustCompile(`^line (\d+): field (.+) not found in type apply\.(\w+)$`)
	reCannot       = regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+) (?:` + "`" + `[^` + "`" + `]*` + "`" + ` )?into (.+)$`)
	reSyntax       = regexp.MustCompile(`^yaml: line (\d+): (.+)$`)
)

// yamlError restates an error of the YAML decoder reading the file at path
// in the file's own words: "stores.yaml:3: unknown field "memries" (did
// you mean "memories"?)", never the Go types it is decoded into. Each
// problem the decoder found is one line.
func yamlError(path string, err error) error {
	var lines []string
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		for _, e := range te.Errors {
			lines = append(lines, path+":"+yamlProblem(e))
		}
	} else if m := reSyntax.FindStringSubmatch(err.Error()); m != nil {
		lines = append(lines, fmt.Sprintf("%s:%s: %s", path, m[1], m[2]))
	} else {
		lines = append(lines, fmt.Sprintf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: ")))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// yamlProblem restates one of the decoder's "line N: …" messages as
// "N: …".
func yamlProblem(msg string) string {
	if m := reUnknownField.FindStringSubmatch(msg); m != nil {
		st, ok := specTypes[m[3]]
		if !ok {
			return fmt.Sprintf("%s: unknown field %q", m[1], m[2])
		}
		known := yamlFields(st.t)
		if best := closest(m[2], known); best != "" {
			return fmt.Sprintf("%s: unknown field %q (did you mean %q?)", m[1], m[2], best)
		}
		return fmt.Sprintf("%s: unknown field %q %s (the fields are %s)", m[1], m[2], st.what, strings.Join(known, ", "))
	}
	if m := reCannot.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s: expected %s here, not %s", m[1], goKind(m[3]), yamlKind(m[2]))
	}
	return msg
}

// yamlFields lists the YAML keys of the struct type t, in order.
func yamlFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// yamlKind names a YAML tag for a person.
func yamlKind(tag string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "a mapping (key: value lines)"
	case "str":
		return "text"
	case "int", "float":
		return "a number"
	case "bool":
		return "true or false"
	case "null":
		return "nothing"
	}
	return "!!" + tag
}

// goKind names what a Go type of the spec holds, for a person.
func goKind(t string) string {
	switch {
	case t == "string", t == "*string":
		return "text"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "apply."):
		return "a mapping (key: value lines)"
	}
	return t
}

// closest returns the word of known nearest to w when it is a plausible
// typo of it (at most a third of its letters off, and at most 3), else "".
func closest(w string, known []string) string {
	best, bestD := "", 0
	for _, k := range known {
		d := editDistance(strings.ToLower(w), k)
		if best == "" || d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > 3 || bestD*3 > len(best) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (in bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
