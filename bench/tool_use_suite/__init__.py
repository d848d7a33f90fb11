"""The task suite and the judges of ``bench/tool_use.py`` (a package, so that ``make bench`` does
not run its modules as benchmarks of their own)."""
