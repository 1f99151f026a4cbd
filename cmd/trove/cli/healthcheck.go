package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthcheckCmd is the probe a container runtime, systemd or a load
// balancer runs: GET /healthz on a serving trove (200 when its database
// answers). It needs no credential and reads no configuration but the
// address, so an image's HEALTHCHECK can run it as is.
func newHealthcheckCmd(e *env) *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when a trove server answers /healthz, 1 otherwise (for containers and probes)",
		Long: `Ask a running trove serve whether it is healthy: GET /healthz, which is
200 when the server's database answers. Exits 0 when healthy, 1 otherwise,
printing why. The default URL follows TROVE_ADDR (as serve does), so inside
the container image it needs no flags.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			target := strings.TrimRight(url, "/") + "/healthz"
			ctx, cancel := context.WithTimeout(e.ctx, timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
			if err != nil {
				return usageError("healthcheck: --url %q: %v", url, err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("unhealthy: %s did not answer: %w", target, err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("unhealthy: %s answered %s: %s", target, res.Status, strings.TrimSpace(string(body)))
			}
			fmt.Fprintf(e.stdout, "healthy: %s\n", target)
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", defaultHealthURL(os.Getenv("TROVE_ADDR")), "base URL of the server (default from TROVE_ADDR)")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}

// defaultHealthURL turns serve's listen address into a URL to probe: an
// unspecified host (":7007", "0.0.0.0:7007", "[::]:7007") is probed on
// loopback.
func defaultHealthURL(addr string) string {
	if addr == "" {
		addr = "127.0.0.1:7007"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
