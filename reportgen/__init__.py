"""reportgen: what a GPU rental bought, reconciled with the plan written before the order."""

__version__ = "0.1.0"
