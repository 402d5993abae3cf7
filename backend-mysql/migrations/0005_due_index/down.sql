DROP INDEX due_idx ON {table};
