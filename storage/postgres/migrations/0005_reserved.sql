-- 0005: reserved for another branch's migration (issue 13 work runs in parallel);
-- the lead renumbers at merge. Does nothing.
SELECT 1;
