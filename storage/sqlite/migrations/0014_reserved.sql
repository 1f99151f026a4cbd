-- 0014: reserved for another branch's migration (issue 25); this branch's
-- is 0015. Merging drops this file, or renumbers 0015 to 0014.
SELECT 1;
