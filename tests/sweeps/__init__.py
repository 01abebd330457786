"""The false-alarm sweeps' tables (docs/diagnosis.md, "The real-world corpus"): one module per sweep over whole public
logs, each holding the benign lines that once raised a warning or worse (verbatim, with their sources), their fault
twins and the failures of the same families that only the subsystem fallback reports. tests/test_public_benign_sweeps.py
checks every table the same way."""
