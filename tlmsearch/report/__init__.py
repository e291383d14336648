"""A run's report: report.html, summary.md and summary.json."""
