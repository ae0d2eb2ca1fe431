"""Whole books in download files: TXT, ZIP, 7z, RAR and EPUB, read as a reader would.

* :mod:`tracker.files.links`: which links and answers are downloads (link text such as
  ``TXT下载``, file extensions, ``Content-Disposition: attachment`` and its ``filename*=``).
* :mod:`tracker.files.archives`: the readers, behind one set of :class:`Limits` (the file's
  size, the bytes inflated, the inflation ratio, the member count) so that a zip bomb, a
  password, a broken or truncated archive ends in :class:`Unreadable` with its reason, never
  in a crash or a clean verdict. No member name ever becomes a path: members are read into
  memory, one at a time, and their names are only labels.
* :mod:`tracker.files.epub`: an EPUB's text in reading order (its OPF spine), nav or not.
* :mod:`tracker.files.books`: each text member split into chapters as ``tracker ingest``
  splits a book (:func:`tracker.text.chapters.split_book`), handed on a batch at a time.
"""
