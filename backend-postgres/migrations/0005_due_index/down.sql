DROP INDEX IF EXISTS {schema}"{name}_due_idx";
