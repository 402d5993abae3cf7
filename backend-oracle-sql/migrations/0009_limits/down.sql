DROP TABLE {starts};
DROP TABLE {limits};
ALTER TABLE {table} DROP COLUMN limit_key;
