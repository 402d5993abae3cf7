ALTER TABLE {table} DROP COLUMN custom_attributes;
ALTER TABLE {table} DROP COLUMN record_order;
ALTER TABLE {table} DROP COLUMN record_date;
