-- 0017: reserved. Another branch of issue 24 takes this number; this file
-- only keeps the numbers contiguous on the search-offpath branch (migrate.go
-- refuses gaps). At merge, drop this file in favour of that branch's 0017.
SELECT 1;
