package httpapi

import (
	"context"
	"log"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"unicode"
)

// HTTPServer returns the net/http server trove serve runs for s: HTTP/1.1,
// unencrypted HTTP/2 (prior knowledge) and, when served with TLS, HTTP/2
// over TLS, Config.Timeouts' ReadHeader and
// Idle as its ReadHeaderTimeout and IdleTimeout (Body and Write are applied
// per request by ServeHTTP), and its own error log (connection errors) sent
// to Config.Logger at Warn with every quoted string and control byte
// removed, so that no request bytes reach the log. Serve it on a listener;
// Shutdown stops it, letting in-flight requests finish. A request's context
// is cancelled when its client disconnects.
func (s *Server) HTTPServer() *http.Server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	protos.SetHTTP2(true) // over TLS (serve --tls-cert), negotiated by ALPN
	srv := &http.Server{
		Handler:           s,
		Protocols:         &protos,
		ReadHeaderTimeout: s.limits.ReadHeader,
		IdleTimeout:       s.limits.Idle,
		// Requests' line and headers; net/http answers 431 past it. The
		// SDKs send well under 2 KB.
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       log.New(errorLogWriter{s.log}, "", 0),
	}
	// Shutdown waits for in-flight requests; change streams never finish
	// by themselves, so they end when it starts.
	srv.RegisterOnShutdown(s.CloseStreams)
	return srv
}

// CloseStreams ends every change stream (server-sent events) being served,
// and every later one at once: their clients reconnect, to another server
// or to this one restarted. HTTPServer's Shutdown calls it.
func (s *Server) CloseStreams() { s.close() }

// errorLogWriter is http.Server's ErrorLog: each line, redacted, as a Warn
// record.
type errorLogWriter struct{ log *slog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	w.log.LogAttrs(context.Background(), slog.LevelWarn, "http server", slog.String("error", redactServerLog(string(p))))
	return len(p), nil
}

// quoted matches a Go-quoted string as net/http and its HTTP/2 server quote
// request bytes in their messages (a bogus preface, a header value).
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"?`)

// redactServerLog returns an http.Server error line with every quoted
// string replaced by "…", every control byte dropped and the rest cut at
// 300 bytes: what net/http says about a connection, never what the client
// sent.
func redactServerLog(line string) string {
	line = quoted.ReplaceAllString(strings.TrimSpace(line), `"…"`)
	line = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, line)
	if len(line) > 300 {
		line = strings.ToValidUTF8(line[:300], "") + "…"
	}
	return line
}
