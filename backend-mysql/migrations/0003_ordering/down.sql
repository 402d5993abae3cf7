ALTER TABLE {table} DROP COLUMN custom_attributes, DROP COLUMN record_order, DROP COLUMN record_date;
