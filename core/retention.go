package core

import (
	"context"
	"time"

	"github.com/trovehq/trove/storage"
)

// PurgeExpiredVersions deletes versions created before Now() minus
// Limits.VersionRetention, except the current version of each live memory,
// and returns how many it deleted. It is the retention job; an operator
// function that needs no principal.
func (s *Service) PurgeExpiredVersions(ctx context.Context) (int, error) {
	cutoff := s.now().Add(-s.limits.VersionRetention)
	var n int
	err := s.write(ctx, "PurgeExpiredVersions", func(tx storage.Tx) error {
		var err error
		n, err = tx.VersionDeleteExpired(ctx, cutoff)
		return err
	})
	if err != nil {
		return 0, err
	}
	if n > 0 {
		s.log.InfoContext(ctx, "core: purged expired memory versions", "count", n, "cutoff", cutoff)
	}
	return n, nil
}

// RunRetention runs PurgeExpiredVersions now and then every interval (one
// hour when every ≤ 0) until ctx is done, logging failures, and returns
// ctx.Err().
func (s *Service) RunRetention(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		every = time.Hour
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := s.PurgeExpiredVersions(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "core: version retention failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
