"""Tests for the HTML report (workloads.report)."""
