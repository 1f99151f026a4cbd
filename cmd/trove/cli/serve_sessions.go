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

	"github.com/trovehq/trove/agentloop"
	"github.com/trovehq/trove/core"
)

// sessionLoopConfig is what serve's session flags configure: how this node
// runs managed sessions' agent loop (the Messages API settings are the
// dreams' --anthropic-api-key and --anthropic-base-url).
type sessionLoopConfig struct {
	workers          int
	lease, heartbeat time.Duration
	maxRequests      int
	maxTokens        int64
}

func addSessionLoopFlags(f *pflag.FlagSet, c *sessionLoopConfig) {
	f.IntVar(&c.workers, "session-workers", 4, "managed sessions whose turns this node runs at once; 0 runs none here (another node runs them)")
	f.DurationVar(&c.lease, "session-lease", 30*time.Second, "how long a node holds a session's turn without a heartbeat; a node that dies leaves its turns to another node this long after")
	f.DurationVar(&c.heartbeat, "session-heartbeat", 2*time.Second, "how often a running turn's lease is renewed and its session re-read (an ended session or a revoked key stops the turn within it)")
	f.IntVar(&c.maxRequests, "session-max-requests-per-turn", 50, "model requests per user message before the turn ends with retries_exhausted")
	f.Int64Var(&c.maxTokens, "session-max-tokens", agentloop.DefaultMaxTokens, "max_tokens of each Messages request of a managed session")
}

func (c sessionLoopConfig) check() error {
	if c.workers < 0 || c.lease <= 0 || c.heartbeat <= 0 || c.heartbeat >= c.lease {
		return fmt.Errorf("--session-workers must be >= 0 and --session-heartbeat positive and shorter than --session-lease (got %d, %s, %s)", c.workers, c.heartbeat, c.lease)
	}
	if c.maxRequests <= 0 || c.maxTokens <= 0 {
		return fmt.Errorf("--session-max-requests-per-turn and --session-max-tokens must be positive")
	}
	return nil
}

// startSessionLoop starts the managed sessions' agent loop over svc and
// returns the function that stops it (waiting for it).
func startSessionLoop(c sessionLoopConfig, d dreamConfig, svc *core.Service, log *slog.Logger) (stop func(), err error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	be := agentloop.NewCoreBackend(svc)
	if c.workers == 0 {
		log.Info("sessions: no agent loop on this node (--session-workers 0)")
		return func() {}, nil
	}
	cfg := agentloop.Config{
		Backend: be, Workers: c.workers, Lease: c.lease, Heartbeat: c.heartbeat,
		MaxRequestsPerTurn: c.maxRequests, MaxTokens: c.maxTokens, Logger: log,
	}
	key := d.apiKey
	if key == "" {
		key = os.Getenv("ANTHROPIC_API_KEY")
	}
	if key == "" {
		log.Warn("sessions: no Anthropic API key (--anthropic-api-key or ANTHROPIC_API_KEY); every managed session's turn will end with a session.error")
	} else {
		opts := []option.RequestOption{option.WithAPIKey(key)}
		if d.baseURL != "" {
			opts = append(opts, option.WithBaseURL(d.baseURL))
		}
		client := anthropic.NewClient(opts...)
		cfg.Claude = &client
	}
	r := agentloop.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	log.Info("sessions: agent loop started", "workers", c.workers)
	return func() { cancel(); <-done }, nil
}
