package core

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/storage"
)

// WebhookOptions are the rules of webhook endpoints and their deliveries.
type WebhookOptions struct {
	// AllowHTTP accepts http:// endpoint URLs; by default only https.
	AllowHTTP bool
	// AllowPrivate accepts URLs whose host is a private, loopback or
	// link-local address (or localhost). The sender's dialer checks every
	// address it connects to by the same rule (webhook.Config).
	AllowPrivate bool
	// RetryBase is the wait before the first retry; each retry doubles it,
	// up to RetryMax, with jitter (half the wait, at random). 0 means 5 s.
	RetryBase time.Duration
	// RetryMax caps the wait between attempts; 0 means one hour.
	RetryMax time.Duration
	// MaxAttempts is how many attempts a delivery gets before it is marked
	// failed and the endpoint's queue moves on; 0 means 24 (about a day
	// with the default waits).
	MaxAttempts int
	// Jitter returns a number in [0, 1); nil means math/rand/v2.
	Jitter func() float64
	// Retention is how long a delivered or failed delivery stays in the
	// delivery log after its last attempt (PruneWebhookDeliveries); 0
	// means DefaultWebhookRetention; a negative value keeps them for ever.
	Retention time.Duration
	// PruneEvery is how often the log is pruned, by whichever sender
	// takes the prune job; 0 means one hour.
	PruneEvery time.Duration
	// NoEndpointCache is how long a node trusts, without reading again,
	// that a workspace has no endpoint at all, which spares the writes of
	// such workspaces a read each; CreateWebhook waits as long after its
	// commit before it returns, so that every change begun on any node
	// after it returns is delivered to the new endpoint. 0 means 100 ms;
	// a negative value: no cache (every write reads, and CreateWebhook
	// does not wait).
	NoEndpointCache time.Duration
}

// DefaultWebhookRetention is how long ended deliveries stay in the log by
// default: 30 days.
const DefaultWebhookRetention = 30 * 24 * time.Hour

func (o WebhookOptions) withDefaults() WebhookOptions {
	if o.RetryBase <= 0 {
		o.RetryBase = 5 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Hour
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 24
	}
	if o.Jitter == nil {
		o.Jitter = rand.Float64
	}
	if o.Retention == 0 {
		o.Retention = DefaultWebhookRetention
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = time.Hour
	}
	if o.NoEndpointCache == 0 {
		o.NoEndpointCache = 100 * time.Millisecond
	}
	return o
}

// retryDelay is the wait after a delivery's attempts-th failed attempt:
// RetryBase·2^(attempts-1) capped at RetryMax, of which the second half is
// random.
func (o WebhookOptions) retryDelay(attempts int) time.Duration {
	d := o.RetryBase
	for i := 1; i < attempts && d < o.RetryMax; i++ {
		d *= 2
	}
	d = min(d, o.RetryMax)
	return d/2 + time.Duration(o.Jitter()*float64(d/2))
}

// WebhookWakes is signalled (without blocking) after a transaction of this
// Service queued deliveries, so a sender in this process starts at once
// rather than at its next poll.
func (s *Service) WebhookWakes() <-chan struct{} { return s.hookWake }

func (s *Service) wakeWebhooks() {
	select {
	case s.hookWake <- struct{}{}:
	default:
	}
}

// ---- endpoints ----

const (
	maxWebhookNameChars = 256
	maxWebhookDescChars = 1024
	maxWebhookURLBytes  = 2048
)

// newWebhookSecret returns a signing secret: whsec_ and the standard
// base64 of 32 random bytes (the Standard Webhooks form).
func newWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = crand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// validateWebhookURL checks an endpoint URL: absolute, https (http when
// allowed), a host, no credentials or fragment, and no private address
// unless allowed. Names are resolved at send time (webhook's dialer);
// here only literal addresses and localhost are refused.
func (s *Service) validateWebhookURL(raw string) error {
	if raw == "" {
		return trove.Errorf(trove.EINVALID, "url is required")
	}
	if len(raw) > maxWebhookURLBytes {
		return trove.Errorf(trove.EINVALID, "url must be at most %d bytes, got %d", maxWebhookURLBytes, len(raw))
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Opaque != "" {
		return trove.Errorf(trove.EINVALID, "url must be an absolute https URL, got %q", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !s.hooks.AllowHTTP {
			return trove.Errorf(trove.EINVALID, "url must use https; this server refuses http:// webhook URLs (its operator can allow them with --webhook-allow-http)")
		}
	default:
		return trove.Errorf(trove.EINVALID, "url must use https, got scheme %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return trove.Errorf(trove.EINVALID, "url must name a host")
	}
	if u.User != nil {
		return trove.Errorf(trove.EINVALID, "url must not carry credentials (user:password@)")
	}
	if u.Fragment != "" {
		return trove.Errorf(trove.EINVALID, "url must not have a fragment (#…)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return trove.Errorf(trove.EINVALID, "url has a bad port %q", p)
		}
	}
	if !s.hooks.AllowPrivate {
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		a, err := netip.ParseAddr(strings.Split(h, "%")[0])
		if h == "localhost" || strings.HasSuffix(h, ".localhost") || (err == nil && trove.IsPrivateAddress(a)) {
			return trove.Errorf(trove.EINVALID, "url names a private, loopback or link-local address (%s); this server delivers to public addresses only (its operator can allow private ones with --webhook-allow-private)", host)
		}
	}
	return nil
}

// validateWebhookEvents checks a list of event types and returns it without
// duplicates, in the order given.
func validateWebhookEvents(events []string) ([]string, error) {
	out := make([]string, 0, len(events))
	for i, e := range events {
		if !trove.IsWebhookEventType(e) {
			return nil, trove.Errorf(trove.EINVALID, "enabled_events[%d]: unknown event type %q", i, e)
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

func validateWebhookText(field, v string, maxChars int) error {
	if !utf8.ValidString(v) {
		return trove.Errorf(trove.EINVALID, "%s must be valid UTF-8", field)
	}
	if n := utf8.RuneCountInString(v); n > maxChars {
		return trove.Errorf(trove.EINVALID, "%s must be at most %d characters, got %d", field, maxChars, n)
	}
	return nil
}

func webhookNotFound(id string) error {
	return trove.Errorf(trove.ENOTFOUND, "webhook endpoint %s not found", id)
}

func cloneWebhook(w *trove.Webhook) *trove.Webhook {
	c := *w
	c.EnabledEvents = slices.Clone(w.EnabledEvents)
	return &c
}

// CreateWebhook implements trove.WebhookService.
func (s *Service) CreateWebhook(ctx context.Context, p trove.CreateWebhookParams) (*trove.Webhook, string, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return nil, "", err
	}
	if err := s.validateWebhookURL(p.URL); err != nil {
		return nil, "", err
	}
	if len(p.EnabledEvents) == 0 {
		return nil, "", trove.Errorf(trove.EINVALID, "enabled_events must list at least one event type")
	}
	events, err := validateWebhookEvents(p.EnabledEvents)
	if err != nil {
		return nil, "", err
	}
	if err := validateWebhookText("name", p.Name, maxWebhookNameChars); err != nil {
		return nil, "", err
	}
	if err := validateWebhookText("description", p.Description, maxWebhookDescChars); err != nil {
		return nil, "", err
	}
	secret := newWebhookSecret()
	var out *trove.Webhook
	err = s.write(ctx, "CreateWebhook", func(tx storage.Tx) error {
		all, err := tx.WebhookList(ctx, pr.WorkspaceID)
		if err != nil {
			return err
		}
		if len(all) >= trove.MaxWebhooksPerWorkspace {
			return trove.Errorf(trove.EINVALID, "a workspace can have at most %d webhook endpoints; delete one first", trove.MaxWebhooksPerWorkspace)
		}
		now := s.now()
		out = &trove.Webhook{ID: trove.NewID(trove.PrefixWebhook, now), WorkspaceID: pr.WorkspaceID, Name: p.Name,
			Description: p.Description, URL: p.URL, EnabledEvents: events, State: trove.WebhookEnabled, CreatedAt: now, UpdatedAt: now}
		return tx.WebhookInsert(ctx, out, secret)
	})
	if err != nil {
		return nil, "", err
	}
	// Every node's memory that the workspace had no endpoint expires
	// before this returns (noHookCache).
	if ttl := s.hooks.NoEndpointCache; ttl > 0 {
		s.noHooks.forget(pr.WorkspaceID)
		t := time.NewTimer(ttl)
		select {
		case <-t.C:
		case <-ctx.Done(): // the caller is gone; the endpoint exists anyway
			t.Stop()
		}
	}
	return cloneWebhook(out), secret, nil
}

// GetWebhook implements trove.WebhookService.
func (s *Service) GetWebhook(ctx context.Context, id string) (*trove.Webhook, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return nil, err
	}
	var out *trove.Webhook
	err = s.read(ctx, "GetWebhook", func(tx storage.Tx) error {
		w, _, err := tx.WebhookGet(ctx, pr.WorkspaceID, id)
		out = w
		return err
	})
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, webhookNotFound(id)
	}
	return out, err
}

// UpdateWebhook implements trove.WebhookService. Enabling an endpoint
// clears its disabled reason and resumes the deliveries queued before it
// was disabled; events that happened while it was disabled were never
// queued.
func (s *Service) UpdateWebhook(ctx context.Context, id string, p trove.UpdateWebhookParams) (*trove.Webhook, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return nil, err
	}
	if p.URL != nil {
		if err := s.validateWebhookURL(*p.URL); err != nil {
			return nil, err
		}
	}
	var events []string
	if len(p.EnabledEvents) > 0 {
		if events, err = validateWebhookEvents(p.EnabledEvents); err != nil {
			return nil, err
		}
	}
	if p.Name != nil {
		if err := validateWebhookText("name", *p.Name, maxWebhookNameChars); err != nil {
			return nil, err
		}
	}
	if p.Description != nil {
		if err := validateWebhookText("description", *p.Description, maxWebhookDescChars); err != nil {
			return nil, err
		}
	}
	switch p.State {
	case "", trove.WebhookEnabled, trove.WebhookDisabled:
	default:
		return nil, trove.Errorf(trove.EINVALID, "state must be \"enabled\" or \"disabled\", got %q", p.State)
	}
	var out *trove.Webhook
	resumed := false
	err = s.write(ctx, "UpdateWebhook", func(tx storage.Tx) error {
		resumed = false
		w, _, err := tx.WebhookGet(ctx, pr.WorkspaceID, id)
		if err != nil {
			return err
		}
		next := cloneWebhook(w)
		if p.URL != nil {
			next.URL = *p.URL
		}
		if p.Name != nil {
			next.Name = *p.Name
		}
		if p.Description != nil {
			next.Description = *p.Description
		}
		if events != nil {
			next.EnabledEvents = events
		}
		now := s.now()
		if p.State != "" {
			next.State = p.State
			if p.State == trove.WebhookEnabled {
				next.DisabledReason = ""
				if w.State != trove.WebhookEnabled {
					// Resume what was queued before it was disabled.
					if err := tx.JobWake(ctx, webhookJobKind, id, now); err != nil {
						return err
					}
					resumed = true
				}
			}
		}
		next.UpdatedAt = now
		if err := tx.WebhookUpdate(ctx, next); err != nil {
			return err
		}
		out = next
		return nil
	})
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, webhookNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	if resumed {
		s.wakeWebhooks()
	}
	return cloneWebhook(out), nil
}

// ListWebhooks implements trove.WebhookService: a workspace has at most
// MaxWebhooksPerWorkspace endpoints, so a page is cut from the whole list.
func (s *Service) ListWebhooks(ctx context.Context, p trove.ListWebhooksParams) (*trove.WebhookPage, error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return nil, err
	}
	limit, err := webhookPageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	if p.AfterID != "" && p.BeforeID != "" {
		return nil, trove.Errorf(trove.EINVALID, "send after_id or before_id, not both")
	}
	var all []trove.Webhook
	if err := s.read(ctx, "ListWebhooks", func(tx storage.Tx) error {
		all, err = tx.WebhookList(ctx, pr.WorkspaceID)
		return err
	}); err != nil {
		return nil, err
	}
	if !p.Asc {
		slices.Reverse(all) // newest first
	}
	cursor := func(id, name string) (int, error) {
		i := slices.IndexFunc(all, func(w trove.Webhook) bool { return w.ID == id })
		if i < 0 {
			return 0, trove.Errorf(trove.EINVALID, "%s: %s is not a webhook endpoint of this workspace", name, id)
		}
		return i, nil
	}
	lo, hi := 0, len(all)
	if p.AfterID != "" {
		i, err := cursor(p.AfterID, "after_id")
		if err != nil {
			return nil, err
		}
		lo = i + 1
	}
	if p.BeforeID != "" {
		i, err := cursor(p.BeforeID, "before_id")
		if err != nil {
			return nil, err
		}
		hi = i
	}
	page := &trove.WebhookPage{Data: []trove.Webhook{}}
	for _, w := range all[lo:min(hi, lo+limit)] {
		page.Data = append(page.Data, *cloneWebhook(&w))
	}
	page.HasMore = lo+limit < hi
	return page, nil
}

// DeleteWebhook implements trove.WebhookService: the endpoint, its queue
// and its job go in one transaction, so no delivery starts after it
// commits (a sender re-reads the endpoint before every attempt).
func (s *Service) DeleteWebhook(ctx context.Context, id string) error {
	pr, err := principal(ctx)
	if err != nil {
		return err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return err
	}
	err = s.write(ctx, "DeleteWebhook", func(tx storage.Tx) error {
		if _, _, err := tx.WebhookGet(ctx, pr.WorkspaceID, id); err != nil {
			return err
		}
		if err := tx.WebhookDelete(ctx, id); err != nil {
			return err
		}
		return tx.JobDelete(ctx, webhookJobKind, id)
	})
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return webhookNotFound(id)
	}
	return err
}

// RegenerateWebhookSecret implements trove.WebhookService.
func (s *Service) RegenerateWebhookSecret(ctx context.Context, id string) (string, error) {
	pr, err := principal(ctx)
	if err != nil {
		return "", err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return "", err
	}
	secret := newWebhookSecret()
	err = s.write(ctx, "RegenerateWebhookSecret", func(tx storage.Tx) error {
		if _, _, err := tx.WebhookGet(ctx, pr.WorkspaceID, id); err != nil {
			return err
		}
		return tx.WebhookSetSecret(ctx, id, secret, s.now())
	})
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return "", webhookNotFound(id)
	}
	if err != nil {
		return "", err
	}
	return secret, nil
}

const kindDeliverySeq = "d"

// ListWebhookDeliveries implements trove.WebhookService.
func (s *Service) ListWebhookDeliveries(ctx context.Context, id string, p trove.ListDeliveriesParams) (*trove.Page[trove.WebhookDelivery], error) {
	pr, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := notSession(pr, "manage webhooks"); err != nil {
		return nil, err
	}
	limit, err := webhookPageLimit(p.Limit)
	if err != nil {
		return nil, err
	}
	var before int64
	if p.Cursor != "" {
		c, err := decodeCursor(p.Cursor, kindDeliverySeq)
		if err != nil {
			return nil, err
		}
		if before, err = strconv.ParseInt(c.I, 10, 64); err != nil || before <= 0 {
			return nil, errBadCursor()
		}
	}
	var rows []trove.WebhookDelivery
	err = s.read(ctx, "ListWebhookDeliveries", func(tx storage.Tx) error {
		if _, _, err := tx.WebhookGet(ctx, pr.WorkspaceID, id); err != nil {
			return err
		}
		rows, err = tx.DeliveryList(ctx, storage.DeliveryListParams{WebhookID: id, BeforeSeq: before, Limit: limit + 1})
		return err
	})
	if trove.ErrorCode(err) == trove.ENOTFOUND {
		return nil, webhookNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	page := &trove.Page[trove.WebhookDelivery]{Data: rows[:min(len(rows), limit)]}
	if len(rows) > limit {
		page.NextPage = encodeCursor(cursorJSON{K: kindDeliverySeq, I: strconv.FormatInt(rows[limit-1].Seq, 10)})
	}
	return page, nil
}

// ---- the sender's side (package webhook) ----

// WebhookClaim is a sender's lease on one endpoint's queue.
type WebhookClaim struct {
	WebhookID string
	Owner     string
	wakeSeq   int64
}

// WebhookSend is one attempt to make: the delivery at the head of an
// endpoint's queue, where to send it and the secret to sign it with, as
// of now.
type WebhookSend struct {
	URL      string
	Secret   string
	Delivery trove.WebhookDelivery
}

// ClaimWebhook takes the lease (until now+lease) of one endpoint whose
// queue has work: woken since it was last emptied, and not waiting out a
// retry's backoff. ENOTFOUND when there is none.
func (s *Service) ClaimWebhook(ctx context.Context, owner string, lease time.Duration) (*WebhookClaim, error) {
	var c *WebhookClaim
	err := s.write(ctx, "ClaimWebhook", func(tx storage.Tx) error {
		now := s.now()
		j, err := tx.JobClaim(ctx, webhookJobKind, owner, now, now.Add(lease))
		if err != nil {
			return err
		}
		c = &WebhookClaim{WebhookID: j.Key, Owner: owner, wakeSeq: j.WakeSeq}
		return nil
	})
	return c, err
}

// NextWebhookSend renews c's lease and returns the endpoint's next attempt
// to make, or nil when the claim is over: the queue is empty or the
// endpoint disabled (the job is released), the endpoint is gone (the job
// is deleted), or the head delivery waits for its retry (the job is
// deferred until then, so no sender takes it sooner and later deliveries
// keep their order behind it). ECONFLICT when c's lease was lost (another
// sender has the endpoint now).
func (s *Service) NextWebhookSend(ctx context.Context, c *WebhookClaim, lease time.Duration) (*WebhookSend, error) {
	var out *WebhookSend
	err := s.write(ctx, "NextWebhookSend", func(tx storage.Tx) error {
		out = nil
		now := s.now()
		if _, err := tx.JobRenew(ctx, webhookJobKind, c.WebhookID, c.Owner, now.Add(lease)); err != nil {
			if trove.ErrorCode(err) == trove.ENOTFOUND {
				return nil // the endpoint was deleted (with its job) meanwhile
			}
			return err
		}
		w, secret, err := tx.WebhookGet(ctx, "", c.WebhookID)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return tx.JobDelete(ctx, webhookJobKind, c.WebhookID)
		}
		if err != nil {
			return err
		}
		if w.State != trove.WebhookEnabled {
			return tx.JobRelease(ctx, webhookJobKind, c.WebhookID, c.Owner, c.wakeSeq, true)
		}
		d, err := tx.DeliveryNext(ctx, c.WebhookID)
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return tx.JobRelease(ctx, webhookJobKind, c.WebhookID, c.Owner, c.wakeSeq, true)
		}
		if err != nil {
			return err
		}
		if d.NextAttemptAt.After(now) {
			return tx.JobDefer(ctx, webhookJobKind, c.WebhookID, c.Owner, d.NextAttemptAt)
		}
		out = &WebhookSend{URL: w.URL, Secret: secret, Delivery: *d}
		return nil
	})
	return out, err
}

// ReleaseWebhook gives up c's lease at once (a sender shutting down); the
// endpoint stays claimable by any sender.
func (s *Service) ReleaseWebhook(ctx context.Context, c *WebhookClaim) error {
	return s.write(ctx, "ReleaseWebhook", func(tx storage.Tx) error {
		return tx.JobRelease(ctx, webhookJobKind, c.WebhookID, c.Owner, c.wakeSeq, false)
	})
}

// WebhookAttempt is the outcome of one attempt.
type WebhookAttempt struct {
	Status int    // the HTTP status; 0 when none came back
	Err    string // why it failed ("" for a 2xx answer); never holds a secret
}

// RecordWebhookAttempt records the outcome of an attempt at d (as
// NextWebhookSend returned it): delivered on a 2xx answer, else retried
// after retryDelay, or failed once it has had MaxAttempts. ECONFLICT when
// the attempt was already recorded by another sender; ENOTFOUND when the
// endpoint was deleted meanwhile. Both leave nothing to do.
func (s *Service) RecordWebhookAttempt(ctx context.Context, d *trove.WebhookDelivery, a WebhookAttempt) error {
	next := *d
	next.Payload = nil
	next.Attempts++
	at := s.now() // the attempt's end, by the clock of every stored time
	next.LastAttemptAt = &at
	next.LastStatus = a.Status
	next.LastError = a.Err
	switch {
	case a.Err == "" && a.Status >= 200 && a.Status < 300:
		next.Status, next.DeliveredAt, next.NextAttemptAt = trove.DeliveryDelivered, &at, at
	case next.Attempts >= s.hooks.MaxAttempts:
		next.Status, next.NextAttemptAt = trove.DeliveryFailed, at
	default:
		if next.LastError == "" {
			next.LastError = "HTTP " + strconv.Itoa(a.Status)
		}
		next.NextAttemptAt = at.Add(s.hooks.retryDelay(next.Attempts)).Truncate(time.Microsecond)
	}
	return s.write(ctx, "RecordWebhookAttempt", func(tx storage.Tx) error { return tx.DeliveryUpdate(ctx, &next) })
}

// The delivery log's retention: one job (webhookPruneKind,
// webhookPruneKey) in the jobs table, claimed by one sender at a time on
// any node and deferred PruneEvery between two runs, so the log is pruned
// about once per PruneEvery by the whole deployment.
const (
	webhookPruneKind = "webhook_prune"
	webhookPruneKey  = "log"
	// webhookPruneBatch is how many deliveries one transaction deletes at
	// most, so a long backlog is pruned in short transactions.
	webhookPruneBatch = 1000
)

// PruneWebhookDeliveries deletes the delivered and failed deliveries whose
// last attempt is older than the retention (WebhookOptions.Retention), when
// the prune job is due: it takes the job's lease (for owner, until
// now+lease, renewed at each batch of at most 1,000 deletions), prunes, and
// defers the job for PruneEvery. It returns how many deliveries it
// deleted: 0 when the job is not due (another node pruned less than
// PruneEvery ago, or is pruning) or retention is off. Pending deliveries
// are never deleted. ECONFLICT when the lease was lost midway.
func (s *Service) PruneWebhookDeliveries(ctx context.Context, owner string, lease time.Duration) (int, error) {
	if s.hooks.Retention < 0 {
		return 0, nil
	}
	claimed := false
	err := s.write(ctx, "ClaimWebhookPrune", func(tx storage.Tx) error {
		claimed = false
		now := s.now()
		// The job exists once woken; a wake leaves a deferral alone, so
		// each process wakes it once, at its first call.
		if !s.pruneWoken.Load() {
			if err := tx.JobWake(ctx, webhookPruneKind, webhookPruneKey, now); err != nil {
				return err
			}
		}
		_, err := tx.JobClaim(ctx, webhookPruneKind, owner, now, now.Add(lease))
		if trove.ErrorCode(err) == trove.ENOTFOUND {
			return nil
		}
		claimed = err == nil
		return err
	})
	if err != nil {
		return 0, err
	}
	s.pruneWoken.Store(true)
	if !claimed {
		return 0, nil
	}
	total := 0
	for {
		n := 0
		err := s.write(ctx, "PruneWebhookDeliveries", func(tx storage.Tx) error {
			now := s.now()
			if _, err := tx.JobRenew(ctx, webhookPruneKind, webhookPruneKey, owner, now.Add(lease)); err != nil {
				return err
			}
			var err error
			n, err = tx.DeliveryPrune(ctx, now.Add(-s.hooks.Retention), webhookPruneBatch)
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < webhookPruneBatch {
			break
		}
	}
	return total, s.write(ctx, "DeferWebhookPrune", func(tx storage.Tx) error {
		return tx.JobDefer(ctx, webhookPruneKind, webhookPruneKey, owner, s.now().Add(s.hooks.PruneEvery))
	})
}

// webhookPageLimit resolves the limit of the endpoint and delivery lists:
// 0 means 20, at most 100.
func webhookPageLimit(limit int) (int, error) {
	switch {
	case limit < 0 || limit > 100:
		return 0, trove.Errorf(trove.EINVALID, "limit must be 0 to 100, got %d", limit)
	case limit == 0:
		return 20, nil
	}
	return limit, nil
}
