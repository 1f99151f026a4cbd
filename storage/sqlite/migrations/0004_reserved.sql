-- Number 0004 is reserved for another branch; this no-op keeps the
-- numbering gap-free until that branch lands (the lead drops it at merge).
SELECT 1;
