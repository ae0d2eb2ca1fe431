"""Book sources (书源) of the reading app 阅读 (Legado) and its clones, imported and run.

A source file is the pirates' own list of pirate sites with a recipe for reading each one,
search box included. ``tracker sources import`` reads one (:mod:`.source`): every source's
site is registered as a discovered candidate, the sources that can be run are stored
(:class:`tracker.stores.book_sources.BookSourceStore`). ``tracker discover`` then runs them
for each work of the library (:mod:`.run`, the ``booksource`` spider): search the site for the
title (:mod:`.urls`), pick the book of that name, read its table of contents and every chapter
with the source's rules (:mod:`.rules`), and send each chapter through the crawl's pipelines.
"""
