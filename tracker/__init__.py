"""tracker: find pirated copies of a master library of Chinese novels and news on the web."""

__version__ = "0.4.0"
