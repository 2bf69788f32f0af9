"""Run folders (``results/<run-id>/``: rows.parquet + run.json) and the summaries read from them."""
