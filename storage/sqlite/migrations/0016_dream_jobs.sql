-- 0016: dreams run on the jobs table like session runs and webhook
-- deliveries: one job ("dream", drm_…) per dream that a runner may still
-- have to take, woken when the dream is created and removed when its
-- runner finishes it (storage.JobDream). The dreams' own lease columns go.
--
-- Backfill: every dream a runner may still have to take gets its job with
-- the lease it holds now: pending and running dreams, and dreams still
-- leased (canceled while a runner holds them, or whose runner died). Their
-- order is their creation's, as the old claim's was.
INSERT INTO jobs (kind, key, pending, wake_seq, lease_owner, lease_expires_at, attempts, woken_at)
SELECT 'dream', id, 1, 1, lease_owner, CASE WHEN lease_owner = '' THEN NULL ELSE lease_expires_at END, attempts, created_at
FROM dreams
WHERE status IN ('pending', 'running') OR lease_owner <> ''
ON CONFLICT (kind, key) DO NOTHING;

ALTER TABLE dreams DROP COLUMN lease_owner;
ALTER TABLE dreams DROP COLUMN lease_expires_at;
ALTER TABLE dreams DROP COLUMN attempts;

-- The webhook log's retention (core.PruneWebhookDeliveries): delivered and
-- failed deliveries by their last attempt.
CREATE INDEX webhook_deliveries_ended ON webhook_deliveries (last_attempt_at) WHERE status <> 'pending';
