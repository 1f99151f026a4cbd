-- 0015: reserved for another branch's migration (issue 25); this branch's
-- is 0016. Merging drops this file, or renumbers 0016 to 0015.
SELECT 1;
