-- 0008: the time machine. Every version carries its leaf hash
-- (trove.VersionLeafHash, computed at insert and kept through redaction) and
-- its chain hash (trove.VersionChainHash over the previous version of its
-- store, computed by the insert statement itself as
-- sha256(prev || int8send(seq) || leaf)), and version_seqs keeps the
-- store's newest chain hash (head), so an insert links to it in the same
-- statement that takes its seq. Versions written before this migration
-- keep NULL hashes: the chain of an existing store starts at its first
-- version written afterwards, from trove.GenesisHash, and `trove audit
-- verify` reports the older versions as predating the chain.
--
-- A forked memory's first version names its source (origin_*).
--
-- No index is added for as-of reads: they group the range of
-- versions_by_seq (store_id, seq <= S) by memory, or for one memory read
-- its versions through versions_by_memory, so writes pay for no new index.

ALTER TABLE versions
    ADD COLUMN leaf_hash bytea,
    ADD COLUMN chain_hash bytea,
    ADD COLUMN origin_store_id text,
    ADD COLUMN origin_version_id text;
ALTER TABLE version_seqs ADD COLUMN head bytea;

-- MemoryInsertBatch inserts thousands of memories in one statement; the
-- row trigger of 0002 would update the store's counter row once per memory,
-- and repeated updates of one row in one transaction cost more each time
-- (quadratic). The batch sets trove.bulk_count for its statement and adds
-- the count itself in one update.
CREATE OR REPLACE FUNCTION trove_memory_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('trove.bulk_count', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        UPDATE stores SET memory_count = memory_count + 1 WHERE id = NEW.store_id;
    ELSIF TG_OP = 'DELETE' THEN
        UPDATE stores SET memory_count = memory_count - 1 WHERE id = OLD.store_id;
    ELSIF OLD.store_id <> NEW.store_id THEN
        UPDATE stores SET memory_count = memory_count - 1 WHERE id = OLD.store_id;
        UPDATE stores SET memory_count = memory_count + 1 WHERE id = NEW.store_id;
    END IF;
    RETURN NULL;
END
$$;
