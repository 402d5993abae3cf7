DROP INDEX IF EXISTS {schema}"{name}_due_priority_idx";
