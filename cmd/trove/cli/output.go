package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// output is the one -o flag of commands that print a result: table (for
// people) or json (the API's shapes, for scripts). "text", the name some
// commands used for table, is accepted as its alias.
type output struct{ format string }

// register adds -o to fs.
func (o *output) register(fs *pflag.FlagSet) {
	fs.StringVarP(&o.format, "output", "o", "table", "output format: table (for people) or json (the API's shapes, for scripts)")
}

// check refuses a format other than table, json or text (a usage error)
// and makes text table.
func (o *output) check() error {
	switch o.format {
	case "table", "json":
		return nil
	case "text":
		o.format = "table"
		return nil
	}
	return usageError("-o must be table or json, not %q", o.format)
}

// json reports whether -o json was asked for.
func (o *output) json() bool { return o.format == "json" }

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
