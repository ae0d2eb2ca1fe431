"""Only for ``scrapyd-deploy`` (scrapyd-client), which builds the project's Scrapyd egg with
``python setup.py bdist_egg`` (and writes a setup.py of its own, packaging the wrong things,
where there is none). Everything is declared in pyproject.toml: the packages, their data and
the ``scrapy`` entry point naming the settings module Scrapyd runs the spiders with."""

from setuptools import setup

setup()
