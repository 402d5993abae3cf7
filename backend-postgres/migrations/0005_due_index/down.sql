DROP INDEX IF EXISTS "{name}_due_idx";
