-- docket 0003_ordering: the FIFO keys (record date, record order) and custom attributes (JSON
-- text, validated and normalized by docket at intake; read with JSON_VALUE when a custom order
-- sorts by them). Nullable, no default: adding them is a dictionary-only change, no row is
-- rewritten. custom_attributes is a CLOB (Oracle 19c has no JSON type; a CLOB, unlike
-- VARCHAR2, has no 4,000-byte limit under MAX_STRING_SIZE = STANDARD) with an IS JSON check,
-- named so 0003's down can drop it with the column. Oracle DDL commits implicitly: each
-- statement stands alone.
ALTER TABLE {table} ADD record_date TIMESTAMP(6);
ALTER TABLE {table} ADD record_order NUMBER(19);
ALTER TABLE {table} ADD custom_attributes CLOB CONSTRAINT "{name}_custom_attributes_json" CHECK (custom_attributes IS JSON);
