DROP INDEX due_priority_idx ON {table};
