// Package loadgen is the load generator of Trove's HTTP benchmarks
// (internal/bench's and httpapi's go test benchmarks; test files only): a
// minimal HTTP/1.1 client, cheap enough to share the machine with the
// server it measures, and the process's CPU clock.
package loadgen

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
)

// Conn is a minimal HTTP/1.1 client: one keep-alive connection to Addr, one
// request at a time (no pipelining), the whole response read (it needs a
// Content-Length; chunked responses are refused). Header holds extra
// request header lines, each ending in "\r\n" (credentials, betas). It is
// not safe for concurrent use.
type Conn struct {
	Addr   string
	Header string

	c         net.Conn
	br        *bufio.Reader
	req, body []byte
}

// Do sends one request and returns the status and the body, which is valid
// until the next call. On any error the connection is dropped (the next
// call dials again).
func (lc *Conn) Do(method, path string, body []byte) (status int, resp []byte, err error) {
	defer func() {
		if err != nil {
			lc.Close()
		}
	}()
	if lc.c == nil {
		c, err := net.Dial("tcp", lc.Addr)
		if err != nil {
			return 0, nil, err
		}
		lc.c, lc.br = c, bufio.NewReaderSize(c, 16<<10)
	}
	r := append(lc.req[:0], method...)
	r = append(r, ' ')
	r = append(r, path...)
	r = append(r, " HTTP/1.1\r\nHost: loadgen\r\n"...)
	r = append(r, lc.Header...)
	if body != nil {
		r = append(r, "Content-Type: application/json\r\nContent-Length: "...)
		r = strconv.AppendInt(r, int64(len(body)), 10)
		r = append(r, "\r\n"...)
	}
	r = append(r, "\r\n"...)
	r = append(r, body...)
	lc.req = r
	if _, err := lc.c.Write(r); err != nil {
		return 0, nil, err
	}
	line, err := lc.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length, closing := -1, false
	for {
		h, err := lc.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, val, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, nil, fmt.Errorf("bad header line %q", h)
		}
		val = bytes.TrimSpace(val)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(val)); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("bad Content-Length %q", val)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, nil, fmt.Errorf("unsupported Transfer-Encoding %q", val)
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(val, []byte("close")):
			closing = true
		}
	}
	if length < 0 {
		return 0, nil, fmt.Errorf("response without Content-Length")
	}
	if cap(lc.body) < length {
		lc.body = make([]byte, length)
	}
	lc.body = lc.body[:length]
	if _, err := io.ReadFull(lc.br, lc.body); err != nil {
		return 0, nil, err
	}
	if closing {
		lc.Close()
	}
	return status, lc.body, nil
}

// Close drops the connection; the next Do dials again.
func (lc *Conn) Close() {
	if lc.c != nil {
		lc.c.Close()
		lc.c, lc.br = nil, nil
	}
}
