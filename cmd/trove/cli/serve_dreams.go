package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/spf13/pflag"

	"github.com/trovehq/trove/core"
	"github.com/trovehq/trove/dreamrun"
	"github.com/trovehq/trove/httpapi"
)

// dreamConfig is what serve's dream flags configure: the Messages API the
// dream runner calls and how it holds dreams.
type dreamConfig struct {
	apiKey, baseURL string
	workers         int
	lease           time.Duration
	heartbeat       time.Duration
	maxTurns        int
	maxTokens       int64
	maxDuration     time.Duration
}

// addDreamFlags registers the dream flags on f.
func addDreamFlags(f *pflag.FlagSet, c *dreamConfig) {
	f.StringVar(&c.apiKey, "anthropic-api-key", "", "Anthropic API key the dream runner calls the Messages API with (env ANTHROPIC_API_KEY); without one every dream fails with model_not_configured")
	f.StringVar(&c.baseURL, "anthropic-base-url", os.Getenv("ANTHROPIC_BASE_URL"), "Messages API base URL, for a gateway or proxy (env ANTHROPIC_BASE_URL; default the SDK's)")
	f.IntVar(&c.workers, "dream-workers", 1, "dreams this node runs at once; 0 runs none here (another node runs them)")
	f.DurationVar(&c.lease, "dream-lease", 30*time.Second, "how long a node holds a dream without a heartbeat; a node that dies leaves its dreams to be failed (runner_lost) this long after")
	f.DurationVar(&c.heartbeat, "dream-heartbeat", 2*time.Second, "how often a running dream's lease is renewed and its cancel checked")
	b := dreamrun.DefaultBudget()
	f.IntVar(&c.maxTurns, "dream-max-turns", b.MaxTurns, "Messages requests per dream before it fails (budget_exhausted)")
	f.Int64Var(&c.maxTokens, "dream-max-tokens", b.MaxTokens, "input+output tokens per dream before it fails (budget_exhausted)")
	f.DurationVar(&c.maxDuration, "dream-max-duration", b.MaxDuration, "wall time per dream before it fails (timeout)")
}

// check refuses dream flags that cannot work; the error names the flags.
func (c dreamConfig) check() error {
	if c.workers < 0 || c.lease <= 0 || c.heartbeat <= 0 || c.heartbeat >= c.lease {
		return fmt.Errorf("--dream-workers must be >= 0 and --dream-heartbeat positive and shorter than --dream-lease (got %d, %s, %s)", c.workers, c.heartbeat, c.lease)
	}
	if c.maxTurns <= 0 || c.maxTokens <= 0 || c.maxDuration <= 0 {
		return fmt.Errorf("--dream-max-turns, --dream-max-tokens and --dream-max-duration must be positive")
	}
	return nil
}

// key is the Anthropic API key dreams call the Messages API with:
// --anthropic-api-key, else $ANTHROPIC_API_KEY.
func (c dreamConfig) key() string {
	if c.apiKey != "" {
		return c.apiKey
	}
	return os.Getenv("ANTHROPIC_API_KEY")
}

// runnerState is what /healthz reports about this node's dream runner, so
// that trove dreams create can warn before a dream fails for want of a
// model key.
func (c dreamConfig) runnerState() string {
	switch {
	case c.workers == 0:
		return httpapi.DreamRunnerNone
	case c.key() == "":
		return httpapi.DreamRunnerNoModel
	}
	return httpapi.DreamRunnerReady
}

// startDreams starts the dream runner over svc and returns the function
// that stops it (waiting for it). Without an API key it logs once that
// dreams will fail, and still runs, so queued dreams end failed with a
// clear error instead of staying pending.
func startDreams(c dreamConfig, svc *core.Service, log *slog.Logger) (stop func(), err error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.workers == 0 {
		log.Info("dreams: no runner on this node (--dream-workers 0)")
		return func() {}, nil
	}
	key := c.key()
	cfg := dreamrun.Config{
		Service: svc, Workers: c.workers, Lease: c.lease, Heartbeat: c.heartbeat, Logger: log,
		Budget: dreamrun.Budget{MaxTurns: c.maxTurns, MaxTokens: c.maxTokens, MaxDuration: c.maxDuration},
	}
	if key == "" {
		log.Warn("dreams: no Anthropic API key (--anthropic-api-key or ANTHROPIC_API_KEY); every dream will fail with model_not_configured")
	} else {
		opts := []option.RequestOption{option.WithAPIKey(key)}
		if c.baseURL != "" {
			opts = append(opts, option.WithBaseURL(c.baseURL))
		}
		client := anthropic.NewClient(opts...)
		cfg.Claude = &client
		log.Info("dreams: runner started", "workers", c.workers, "base_url", c.baseURL)
	}
	r := dreamrun.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}
