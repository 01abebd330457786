"""Detection before the failure: multi-signal anomaly detection over Prometheus metrics (DCGM and node
exporters), flags turned into ledger findings and soft exclusions. docs/detection.md."""
