"""Render what the analysis found: report.json, the static site, charts, the order note and the next plan."""
