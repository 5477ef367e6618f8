"""The plan written before the order: its typed schema (schema), loading it from plan.yaml (load) and freezing it (freeze)."""
