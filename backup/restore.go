package backup

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// Restore loads the backup r holds into the empty database l, in one
// transaction: every row or none. It reads r once, a row at a time
// (bounded memory), and checks it as it goes: the header's format and
// version, that every table and column is one this build knows (a backup
// from a newer Trove with tables or columns this one lacks is refused;
// one from an older Trove without a table or a nullable column loads,
// with no rows or NULLs there, and its columns this one retired,
// storage.BackupRetired, are read and dropped), every value's type, each table's row
// count, the end line and the gzip checksum, all before the commit. A
// database that already holds rows is refused with ECONFLICT, a file that
// is not a complete backup with EINVALID. It returns the header.
func Restore(ctx context.Context, r io.Reader, l storage.Loader, opts Options) (*Header, error) {
	zr, err := gzip.NewReader(bufio.NewReaderSize(r, 256<<10))
	if err != nil {
		return nil, errCorrupt("not gzip data (%v)", err)
	}
	d := &decoder{dec: jsontext.NewDecoder(zr), opts: opts}
	hdr, plans, err := d.header()
	if err != nil {
		return nil, err
	}
	err = l.Load(ctx, func(tx storage.LoadTx) error {
		for _, p := range plans {
			d.plan = p
			n, err := tx.Insert(ctx, p.spec, d.next)
			if err != nil {
				return err
			}
			if n != p.hdr.Rows {
				return errCorrupt("table %s holds %d rows, its header says %d", p.hdr.Name, n, p.hdr.Rows)
			}
			d.progress()
		}
		return d.end(hdr)
	})
	if err != nil {
		// gzip finds a damaged stream only at its end (its checksum), and a
		// damaged part may first decode into rows the database refuses (a
		// flipped bit that makes two versions alike): then the file is what
		// is wrong, not the row. Read the rest to know (nothing is kept;
		// not when the database was unavailable, which no file causes).
		if !isCorrupt(err) && trove.ErrorCode(err) != trove.EUNAVAILABLE && ctx.Err() == nil {
			if _, derr := io.Copy(io.Discard, zr); derr != nil {
				return nil, errCorrupt("the file is damaged (%v); restoring stopped at: %v", derr, err)
			}
		}
		return nil, err
	}
	return hdr, nil
}

// plan is how one table of the file is loaded: for each column of the
// table as this build knows it (spec), the index of the file's column
// holding it (-1: none, NULL).
type plan struct {
	hdr  *TableHeader
	spec *storage.BackupTable
	from []int
	// types are the file's columns.
	types []storage.BackupColumn
}

type decoder struct {
	dec  *jsontext.Decoder
	opts Options
	plan *plan
	// pending is the table named by a row line whose start was read while
	// loading the table before it ("" when none; endMark for the end line).
	pending string
	done    int64
	total   int64
	vals    []any
	row     []any
}

const endMark = "\x00end"

func (d *decoder) header() (*Header, []*plan, error) {
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, nil, d.readError(err)
	}
	var h Header
	if err := json.Unmarshal(v, &h); err != nil || h.Format != Format {
		return nil, nil, errCorrupt("the first line is not a trove-backup header")
	}
	if h.Version != Version {
		return nil, nil, trove.Errorf(trove.EINVALID, "the backup has format version %d; this trove reads version %d: restore it with the trove release that wrote it or a newer one", h.Version, Version)
	}
	seen := map[string]bool{}
	var plans []*plan
	for i := range h.Tables {
		th := &h.Tables[i]
		spec := storage.BackupTableNamed(th.Name)
		if spec == nil {
			return nil, nil, trove.Errorf(trove.EINVALID, "the backup holds table %s, which this trove does not know: restore it with a trove at least as new as the one that wrote it", th.Name)
		}
		if seen[th.Name] {
			return nil, nil, errCorrupt("table %s appears twice in the header", th.Name)
		}
		seen[th.Name] = true
		if th.Rows < 0 {
			return nil, nil, errCorrupt("table %s has a negative row count", th.Name)
		}
		p := &plan{hdr: th, spec: spec, from: make([]int, len(spec.Columns))}
		idx := map[string]int{}
		for j, c := range th.Columns {
			sc := spec.Column(c.Name)
			if sc == nil {
				sc = storage.BackupRetiredColumn(th.Name, c.Name) // read, then dropped
			}
			if sc == nil {
				return nil, nil, trove.Errorf(trove.EINVALID, "the backup holds column %s.%s, which this trove does not know: restore it with a trove at least as new as the one that wrote it", th.Name, c.Name)
			}
			if _, dup := idx[c.Name]; dup {
				return nil, nil, errCorrupt("column %s.%s appears twice", th.Name, c.Name)
			}
			if sc.Type != c.Type || (c.Null && !sc.Null) {
				return nil, nil, trove.Errorf(trove.EINVALID, "the backup's column %s.%s is %s (null %v); this trove has %s (null %v)", th.Name, c.Name, c.Type, c.Null, sc.Type, sc.Null)
			}
			idx[c.Name] = j
			p.types = append(p.types, storage.BackupColumn(c))
		}
		for k, sc := range spec.Columns {
			j, ok := idx[sc.Name]
			if !ok {
				if !sc.Null {
					return nil, nil, trove.Errorf(trove.EINVALID, "the backup lacks column %s.%s, which cannot be NULL: it was written by a trove this one cannot restore from", th.Name, sc.Name)
				}
				j = -1
			}
			p.from[k] = j
		}
		plans = append(plans, p)
		d.total += th.Rows
	}
	return &h, plans, nil
}

// readError turns a decoding error into the one error of a bad file.
func (d *decoder) readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errCorrupt("the file ends early (truncated)")
	}
	var te *trove.Error
	if errors.As(err, &te) {
		return err
	}
	return errCorrupt("%v", err)
}

func (d *decoder) token(want jsontext.Kind) (jsontext.Token, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return tok, d.readError(err)
	}
	if tok.Kind() != want {
		where := "the end line"
		if d.plan != nil {
			where = "a line of table " + d.plan.hdr.Name
		}
		return tok, errCorrupt("unexpected %s in %s", tok.Kind(), where)
	}
	return tok, nil
}

// lineStart reads the start of the next line: the table a row line names,
// or endMark.
func (d *decoder) lineStart() (string, error) {
	if _, err := d.token('{'); err != nil {
		return "", err
	}
	k, err := d.token('"')
	if err != nil {
		return "", err
	}
	switch k.String() {
	case "table":
		t, err := d.token('"')
		if err != nil {
			return "", err
		}
		return t.String(), nil
	case "end":
		return endMark, nil
	}
	return "", errCorrupt("a line starts with %q", k.String())
}

// next is the storage.LoadTx.Insert source of the current plan's table.
func (d *decoder) next() ([]any, error) {
	name := d.pending
	if name == "" {
		var err error
		if name, err = d.lineStart(); err != nil {
			return nil, err
		}
	}
	if name != d.plan.hdr.Name {
		d.pending = name
		return nil, io.EOF
	}
	d.pending = ""
	if k, err := d.token('"'); err != nil {
		return nil, err
	} else if k.String() != "row" {
		return nil, errCorrupt("a line of table %s has %q where \"row\" belongs", name, k.String())
	}
	if _, err := d.token('['); err != nil {
		return nil, err
	}
	p := d.plan
	d.vals = d.vals[:0]
	for i := range p.types {
		v, err := d.value(&p.types[i])
		if err != nil {
			return nil, err
		}
		d.vals = append(d.vals, v)
	}
	if _, err := d.token(']'); err != nil {
		return nil, err
	}
	if _, err := d.token('}'); err != nil {
		return nil, err
	}
	d.row = d.row[:0]
	for _, j := range p.from {
		if j < 0 {
			d.row = append(d.row, nil)
		} else {
			d.row = append(d.row, d.vals[j])
		}
	}
	d.done++
	if d.done%progressEvery == 0 {
		d.progress()
	}
	return d.row, nil
}

func (d *decoder) progress() {
	if d.opts.Progress != nil {
		d.opts.Progress(Progress{Table: d.plan.hdr.Name, Done: d.done, Total: d.total})
	}
}

// value reads one value of column c.
func (d *decoder) value(c *storage.BackupColumn) (any, error) {
	tok, err := d.dec.ReadToken()
	if err != nil {
		return nil, d.readError(err)
	}
	kind := tok.Kind()
	bad := func() (any, error) {
		return nil, errCorrupt("table %s, row %d: column %s holds %s, not a %s", d.plan.hdr.Name, d.done+1, c.Name, kind, c.Type)
	}
	if tok.Kind() == 'n' {
		if !c.Null {
			return bad()
		}
		return nil, nil
	}
	switch c.Type {
	case storage.ColText:
		switch tok.Kind() {
		case '"':
			return tok.String(), nil
		case '{':
			// A Token is valid until the next read: take its text at once.
			k, err := d.token('"')
			if err != nil {
				return nil, err
			}
			key := k.String()
			s, err := d.token('"')
			if err != nil {
				return nil, err
			}
			b, derr := base64.StdEncoding.DecodeString(s.String())
			if _, err := d.token('}'); err != nil {
				return nil, err
			}
			if key != "base64" || derr != nil {
				return bad()
			}
			return string(b), nil
		}
	case storage.ColInt:
		if tok.Kind() == '0' {
			n, err := tok.Int()
			if err != nil {
				return bad()
			}
			return n, nil
		}
	case storage.ColBytes:
		if tok.Kind() == '"' {
			b, err := base64.StdEncoding.DecodeString(tok.String())
			if err != nil {
				return bad()
			}
			return b, nil
		}
	case storage.ColTime:
		if tok.Kind() == '"' {
			tm, err := time.Parse(timeLayout, tok.String())
			if err != nil {
				return bad()
			}
			return tm.UTC(), nil
		}
	case storage.ColBool:
		switch tok.Kind() {
		case 't':
			return true, nil
		case 'f':
			return false, nil
		}
	case storage.ColStrings:
		if tok.Kind() == '[' {
			out := []string{}
			for d.dec.PeekKind() == '"' {
				s, err := d.token('"')
				if err != nil {
					return nil, err
				}
				out = append(out, s.String())
			}
			if _, err := d.token(']'); err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	return bad()
}

// end reads the end line and checks that nothing follows it (which also
// makes the gzip reader check its checksum).
func (d *decoder) end(h *Header) error {
	name := d.pending
	if name == "" {
		var err error
		if name, err = d.lineStart(); err != nil {
			return err
		}
	}
	if name != endMark {
		return errCorrupt("a row of table %s where none belongs (after its table, or a table the header does not list)", name)
	}
	t, err := d.dec.ReadToken()
	if err != nil {
		return d.readError(err)
	}
	if t.Kind() != 't' {
		return errCorrupt("a bad end line")
	}
	k, err := d.token('"')
	if err != nil {
		return err
	}
	key := k.String() // a Token is valid until the next read
	n, err := d.token('0')
	if err != nil {
		return err
	}
	if rows, ierr := n.Int(); key != "rows" || ierr != nil || rows != h.Rows() {
		return errCorrupt("the end line does not match the header")
	}
	if _, err := d.token('}'); err != nil {
		return err
	}
	if _, err := d.dec.ReadToken(); !errors.Is(err, io.EOF) {
		if err == nil {
			return errCorrupt("data after the end line")
		}
		return errCorrupt("%v", err)
	}
	return nil
}
