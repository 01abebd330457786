"""Reports: what the loop achieved, read only from the failure ledger (SQLite or PostgreSQL) and computed in
SQL, the same numbers on both. `build.build_report` returns the sections as plain data (the `--json`
contract, docs/reports.md defines every field); `render` prints them as text or CSV, `html` writes one
self-contained page with inline SVG charts, and `exporter` serves the ledger's state to Prometheus."""
