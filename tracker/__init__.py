"""tracker: find pirated copies of a master library of Chinese novels and news on the web."""

# The package's version, in this one place: pyproject.toml reads it, and so do the User-Agent
# tokens (tracker/VERSION in a crawl, tracker-check/VERSION for `tracker check URL`).
__version__ = "0.4.0"
