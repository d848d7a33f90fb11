"""The message splits of ``bench/archivist_gate.py`` (a package, so that ``make bench`` does not run them
as benchmarks of their own)."""
