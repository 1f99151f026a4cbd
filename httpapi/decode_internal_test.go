package httpapi

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/trovehq/trove"
)

func TestMetadataPatch(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	for _, tc := range []struct {
		name string
		in   map[string]jsontext.Value
		want map[string]*string
		bad  bool
	}{
		{name: "empty", in: map[string]jsontext.Value{}, want: map[string]*string{}},
		{name: "set and delete", in: map[string]jsontext.Value{"a": jsontext.Value(`"x"`), "b": jsontext.Value(`null`), "c": jsontext.Value(`""`)},
			want: map[string]*string{"a": s("x"), "b": nil, "c": s("")}},
		{name: "number", in: map[string]jsontext.Value{"a": jsontext.Value(`1`)}, bad: true},
		{name: "object", in: map[string]jsontext.Value{"a": jsontext.Value(`{"b":"c"}`)}, bad: true},
		{name: "bool", in: map[string]jsontext.Value{"a": jsontext.Value(`true`)}, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := metadataPatch(tc.in)
			if tc.bad {
				if trove.ErrorCode(err) != trove.EINVALID {
					t.Fatalf("metadataPatch = %v, %v; want EINVALID", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("metadataPatch (-want +got):\n%s", diff)
			}
		})
	}
}
