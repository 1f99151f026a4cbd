-- 0007: full-text search over live memories (storage.Tx.MemorySearch).
--
-- memories.search is a stored generated tsvector of the path (weight A) and
-- the content (weight D), so it changes in the same statement, and so the
-- same transaction, as the row it belongs to, whatever statement changes
-- the row; GIN indexes it. Only live memories are indexed, so a version's
-- text (a redacted one in particular) is never findable. Adding the column
-- rewrites the table once, which computes it for the memories already
-- there.
--
-- Words: the 'simple' configuration (lower case, no stemming, no stop
-- words) over the text with every ASCII punctuation character turned into a
-- space first, so that the parser sees words and numbers only (it would
-- otherwise keep "/notes/a.md", "v1.2" or an e-mail address as one token),
-- which matches trove.SearchWords and the SQLite index for ASCII text.
-- Content is bytea (it may hold NUL, which text cannot): NUL bytes
-- separate words like spaces.

CREATE FUNCTION trove_search_words(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $$ SELECT translate(t, E'!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', repeat(' ', 32)) $$;

CREATE FUNCTION trove_search_content(b bytea) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE
AS $$
DECLARE
    out text := '';
    i integer;
BEGIN
    LOOP
        i := position('\x00'::bytea IN b);
        EXIT WHEN i = 0;
        out := out || convert_from(substring(b FROM 1 FOR i - 1), 'UTF8') || ' ';
        b := substring(b FROM i + 1);
    END LOOP;
    RETURN out || convert_from(b, 'UTF8');
END
$$;

ALTER TABLE memories ADD COLUMN search tsvector GENERATED ALWAYS AS (
    setweight(to_tsvector('simple'::regconfig, trove_search_words(path)), 'A') ||
    setweight(to_tsvector('simple'::regconfig, trove_search_words(trove_search_content(content))), 'D')
) STORED;

CREATE INDEX memories_search ON memories USING gin (search);
