package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/webhook"
)

// webhookConfig is what serve's webhook flags configure: the rules of
// endpoint URLs (core) and how this node sends deliveries (webhook).
type webhookConfig struct {
	workers             int
	lease, timeout      time.Duration
	retryBase, retryMax time.Duration
	maxAttempts         int
	retention           time.Duration
	allowPrivate        bool
	allowHTTP           bool
}

func addWebhookFlags(f *pflag.FlagSet, c *webhookConfig) {
	f.IntVar(&c.workers, "webhook-workers", 4, "webhook endpoints this node sends to at once; 0 sends none here (another node does)")
	f.DurationVar(&c.lease, "webhook-lease", time.Minute, "how long a node holds an endpoint's queue; a node that dies leaves it to another this long after (must exceed --webhook-timeout)")
	f.DurationVar(&c.timeout, "webhook-timeout", 15*time.Second, "bound on one delivery attempt, from connecting to the end of the answer")
	f.DurationVar(&c.retryBase, "webhook-retry-base", 5*time.Second, "wait before a failed delivery's first retry; it doubles at each retry, with jitter")
	f.DurationVar(&c.retryMax, "webhook-retry-max", time.Hour, "longest wait between two attempts of a delivery")
	f.IntVar(&c.maxAttempts, "webhook-max-attempts", 24, "attempts of a delivery before it is marked failed and its endpoint's queue moves on")
	f.DurationVar(&c.retention, "webhook-retention", core.DefaultWebhookRetention, "how long delivered and failed deliveries stay in the delivery log after their last attempt (pruned hourly); 0 keeps them for ever")
	f.BoolVar(&c.allowPrivate, "webhook-allow-private", false, "allow webhook URLs and connections to private, loopback and link-local addresses (tests, a private network)")
	f.BoolVar(&c.allowHTTP, "webhook-allow-http", false, "allow http:// webhook URLs (tests, a private network); deliveries are then unencrypted")
}

func (c webhookConfig) check() error {
	if c.workers < 0 || c.timeout <= 0 || c.lease <= c.timeout {
		return fmt.Errorf("--webhook-workers must be >= 0 and --webhook-lease longer than --webhook-timeout (got %d, %s, %s)", c.workers, c.lease, c.timeout)
	}
	if c.retryBase <= 0 || c.retryMax < c.retryBase || c.maxAttempts <= 0 {
		return fmt.Errorf("--webhook-retry-base must be positive and at most --webhook-retry-max, and --webhook-max-attempts positive")
	}
	if c.retention < 0 {
		return fmt.Errorf("--webhook-retention must be >= 0 (0 keeps the log for ever), got %s", c.retention)
	}
	return nil
}

// coreOptions are the core rules the flags set.
func (c webhookConfig) coreOptions() core.WebhookOptions {
	retention := c.retention
	if retention == 0 {
		retention = -1 // core: kept for ever
	}
	return core.WebhookOptions{AllowHTTP: c.allowHTTP, AllowPrivate: c.allowPrivate, RetryBase: c.retryBase, RetryMax: c.retryMax,
		MaxAttempts: c.maxAttempts, Retention: retention}
}

// startWebhooks starts the webhook sender over svc and returns the
// function that stops it (waiting for it).
func startWebhooks(c webhookConfig, svc *core.Service, log *slog.Logger) (stop func(), err error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.workers == 0 {
		log.Info("webhooks: no sender on this node (--webhook-workers 0)")
		return func() {}, nil
	}
	s := webhook.New(webhook.Config{Backend: svc, Workers: c.workers, Lease: c.lease, Timeout: c.timeout,
		AllowPrivate: c.allowPrivate, AllowHTTP: c.allowHTTP, Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	log.Info("webhooks: sender started", "workers", c.workers)
	return func() { cancel(); <-done }, nil
}
