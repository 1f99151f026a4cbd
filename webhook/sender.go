// Package webhook is the webhook sender that trove serve runs, like the
// dream runner and the agent loop: it works through the durable outbox
// that core fills in the same transaction as each change (core's
// webhookemit.go), one endpoint at a time under a lease in the jobs table
// (kind "webhook"), so that a dead node's endpoints are taken over by
// another once its lease expires.
//
// Each endpoint's deliveries are sent in their queue's order: the next is
// sent only once the one before it is delivered or has failed for good,
// and a failed attempt defers the endpoint's whole queue until its retry
// (exponential backoff with jitter, core.WebhookOptions). Delivery is at
// least once: an attempt whose outcome was not recorded (the node died,
// the lease was lost) is made again, with the same webhook-id, so the
// receiver deduplicates by it.
//
// Every attempt is a Standard Webhooks message (webhook-id,
// webhook-timestamp, webhook-signature: HMAC-SHA256 of id.timestamp.body
// with the endpoint's whsec_ secret, read afresh before each attempt),
// which the official SDK's client.Beta.Webhooks.Unwrap verifies. Endpoints
// are treated as hostile: bounded connect, header and whole-attempt times,
// response bodies read up to a bound and discarded, redirects not
// followed, no proxy, and (unless Config.AllowPrivate) no connection to a
// private, loopback or link-local address, checked on the address actually
// dialled, after name resolution.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/core"
)

// Backend is what the sender needs of Trove's services (core in trove
// serve).
type Backend interface {
	ClaimWebhook(ctx context.Context, owner string, lease time.Duration) (*core.WebhookClaim, error)
	NextWebhookSend(ctx context.Context, c *core.WebhookClaim, lease time.Duration) (*core.WebhookSend, error)
	RecordWebhookAttempt(ctx context.Context, d *trove.WebhookDelivery, a core.WebhookAttempt) error
	ReleaseWebhook(ctx context.Context, c *core.WebhookClaim) error
	WebhookWakes() <-chan struct{}
	PruneWebhookDeliveries(ctx context.Context, owner string, lease time.Duration) (int, error)
}

var _ Backend = (*core.Service)(nil)

// Config configures a Sender. Zero fields take the defaults said.
type Config struct {
	Backend Backend
	// Owner names this sender in leases; "" means host, process and a
	// random suffix.
	Owner string
	// Workers is how many endpoints are worked on at once (default 4).
	Workers int
	// Lease (default 1 min) is how long a claim of an endpoint holds; it
	// is renewed before every attempt, so it must exceed Timeout.
	Lease time.Duration
	// Poll (default 1 s) is how often an idle worker looks for work that
	// another node queued or whose retry came due.
	Poll time.Duration
	// PruneCheck (default 1 min) is how often the sender tries to take the
	// delivery log's prune job (Backend.PruneWebhookDeliveries; the job
	// itself runs once per core.WebhookOptions.PruneEvery, on one node).
	PruneCheck time.Duration
	// ConnectTimeout bounds a connection (default 5 s); Timeout a whole
	// attempt, from dialling to the end of the response (default 15 s).
	ConnectTimeout, Timeout time.Duration
	// MaxResponseBytes of a response body are read and discarded (default
	// 64 KiB); the rest is not read.
	MaxResponseBytes int64
	// MaxBatch is how many attempts one claim makes before the endpoint is
	// released for any sender to take (default 100), so one long queue
	// does not hold a worker for ever.
	MaxBatch int
	// AllowPrivate lets the sender connect to private, loopback and
	// link-local addresses (trove.IsPrivateAddress): tests, a private
	// network. AllowHTTP lets it send to http:// URLs.
	AllowPrivate, AllowHTTP bool
	// Now is the clock of webhook-timestamp (default time.Now); receivers
	// refuse a timestamp far from their own clock. Stored times are core's.
	Now    func() time.Time
	Logger *slog.Logger
}

// Sender delivers queued webhook events.
type Sender struct {
	cfg    Config
	be     Backend
	client *http.Client
	log    *slog.Logger
}

// New returns a Sender over cfg.Backend.
func New(cfg Config) *Sender {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.PruneCheck <= 0 {
		cfg.PruneCheck = time.Minute
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 15 * time.Second
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = 64 << 10
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 100
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Owner == "" {
		cfg.Owner = trove.NewLeaseOwner()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sender{cfg: cfg, be: cfg.Backend, client: newClient(cfg), log: cfg.Logger}
}

// errPrivate is the dialer's refusal of a non-public address.
var errPrivate = errors.New("refused: the address is private, loopback or link-local (the server allows only public ones)")

// newClient returns the HTTP client of attempts: no proxy, no redirects,
// no compression, bounded times and header size, and a dialer that checks
// every address it connects to.
func newClient(cfg Config) *http.Client {
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return errPrivate
			}
			a, err := netip.ParseAddr(host)
			if err != nil || trove.IsPrivateAddress(a) {
				return fmt.Errorf("%w: %s", errPrivate, host)
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSHandshakeTimeout:    cfg.ConnectTimeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 16 << 10,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Run works until ctx ends, Workers endpoints at a time, and prunes the
// delivery log when its job is due (checked at start, then every
// PruneCheck).
func (s *Sender) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.cfg.PruneCheck)
		defer t.Stop()
		for {
			n, err := s.be.PruneWebhookDeliveries(ctx, s.cfg.Owner, s.cfg.Lease)
			switch {
			case err != nil && ctx.Err() == nil:
				s.log.Error("webhook log prune", "err", err)
			case n > 0:
				s.log.Info("webhook log pruned", "deliveries", n)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	for range s.cfg.Workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				ran, err := s.RunOnce(ctx)
				if err != nil && ctx.Err() == nil {
					s.log.Error("webhook sender", "err", err)
				}
				if !ran || err != nil {
					s.wait(ctx)
				}
			}
		})
	}
	wg.Wait()
	s.client.CloseIdleConnections()
}

// wait returns when this process queued deliveries, after Poll, or when
// ctx ends.
func (s *Sender) wait(ctx context.Context) {
	t := time.NewTimer(s.cfg.Poll)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-s.be.WebhookWakes():
	}
}

// RunOnce claims one endpoint with work and sends its due deliveries in
// order until its queue is empty, its head waits for a retry, or MaxBatch
// attempts were made. ran is false when no endpoint had work.
func (s *Sender) RunOnce(ctx context.Context) (ran bool, err error) {
	c, err := s.be.ClaimWebhook(ctx, s.cfg.Owner, s.cfg.Lease)
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	log := s.log.With("webhook_id", c.WebhookID)
	for range s.cfg.MaxBatch {
		send, err := s.be.NextWebhookSend(ctx, c, s.cfg.Lease)
		if trove.ErrorCode(err) == trove.ECONFLICT {
			log.Warn("webhook sender: lease lost; another sender has the endpoint")
			return true, nil
		}
		if err != nil || send == nil {
			return true, err
		}
		a := s.Attempt(ctx, send)
		if ctx.Err() != nil {
			// Shutting down mid-attempt: its outcome is unknown, so it is
			// not recorded and will be made again.
			s.release(c)
			return true, nil
		}
		if a.Err != "" {
			log.Info("webhook delivery failed", "event_id", send.Delivery.EventID, "attempt", send.Delivery.Attempts+1, "status", a.Status, "err", a.Err)
		}
		err = s.be.RecordWebhookAttempt(ctx, &send.Delivery, a)
		switch trove.ErrorCode(err) {
		case "":
		case trove.ECONFLICT, trove.ENOTFOUND:
			// Recorded by another sender, or the endpoint was deleted.
		default:
			return true, err
		}
	}
	s.release(c)
	return true, nil
}

func (s *Sender) release(c *core.WebhookClaim) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.be.ReleaseWebhook(ctx, c); err != nil && trove.ErrorCode(err) != trove.ECONFLICT && trove.ErrorCode(err) != trove.ENOTFOUND {
		s.log.Warn("webhook sender: release failed; the lease will expire", "webhook_id", c.WebhookID, "err", err)
	}
}

// maxErrorBytes bounds a recorded error.
const maxErrorBytes = 512

// Attempt makes one attempt at send and reports its outcome; it never
// returns an error, only an outcome to record. The error text names what
// failed without the URL (whose query may hold a token) or any secret.
func (s *Sender) Attempt(ctx context.Context, send *core.WebhookSend) core.WebhookAttempt {
	now := s.cfg.Now()
	var a core.WebhookAttempt
	fail := func(msg string) core.WebhookAttempt {
		if len(msg) > maxErrorBytes {
			msg = msg[:maxErrorBytes]
		}
		a.Err = strings.ToValidUTF8(msg, "?")
		return a
	}
	u, err := url.Parse(send.URL)
	if err != nil || (u.Scheme != "https" && !(u.Scheme == "http" && s.cfg.AllowHTTP)) {
		return fail("the endpoint URL is not an https URL this server may send to")
	}
	d := &send.Delivery
	sig, err := Sign(send.Secret, d.EventID, now, d.Payload)
	if err != nil {
		return fail("the endpoint's signing secret is malformed")
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, send.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return fail("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Trove-Webhooks/1")
	req.Header.Set("webhook-id", d.EventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(fmt.Sprintf("no answer within %s", s.cfg.Timeout))
		}
		return fail(err.Error())
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, s.cfg.MaxResponseBytes))
	_ = resp.Body.Close()
	a.Status = resp.StatusCode
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return a
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return fail(fmt.Sprintf("HTTP %d: a redirect, not followed (point the endpoint at its final URL)", resp.StatusCode))
	}
	return fail("HTTP " + strconv.Itoa(resp.StatusCode))
}

// Sign returns the webhook-signature header of a Standard Webhooks
// message: "v1," and the base64 HMAC-SHA256 of "id.timestamp.body" keyed
// with the secret's bytes (the base64 after "whsec_").
func Sign(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}
