DROP TABLE {table};
