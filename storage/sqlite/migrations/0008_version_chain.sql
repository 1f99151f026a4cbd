-- 0008: the time machine. Every version carries its leaf hash
-- (trove.VersionLeafHash, computed at insert and kept through redaction) and
-- its chain hash (trove.VersionChainHash over the previous version of its
-- store), and version_seqs keeps the store's newest chain hash (head), so
-- an insert links to it without reading versions (retention may have
-- deleted the previous version). Versions written before this migration
-- keep NULL hashes: the chain of an existing store starts at its first
-- version written afterwards, from trove.GenesisHash, and `trove audit
-- verify` reports the older versions as predating the chain.
--
-- A forked memory's first version names its source (origin_*).
--
-- No index is added for as-of reads: they group the range of
-- versions_by_seq (store_id, seq <= S) by memory, or for one memory read
-- its versions through versions_by_memory, so writes pay for no new index.

ALTER TABLE versions ADD COLUMN leaf_hash BLOB;
ALTER TABLE versions ADD COLUMN chain_hash BLOB;
ALTER TABLE versions ADD COLUMN origin_store_id TEXT;
ALTER TABLE versions ADD COLUMN origin_version_id TEXT;
ALTER TABLE version_seqs ADD COLUMN head BLOB;
