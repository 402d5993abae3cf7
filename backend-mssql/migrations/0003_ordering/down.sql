ALTER TABLE {table} DROP CONSTRAINT [{name}_custom_attributes_json];
ALTER TABLE {table} DROP COLUMN custom_attributes;
ALTER TABLE {table} DROP COLUMN record_order;
ALTER TABLE {table} DROP COLUMN record_date;
