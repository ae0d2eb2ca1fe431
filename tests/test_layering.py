"""The stores are the only way into MongoDB: no collection operation outside ``tracker/stores/``.

The guard reads the source (its syntax tree, nothing is imported) of ``tracker/``, ``spiders/``
and ``pipelines/`` outside ``tracker/stores/`` and names every place that:

* calls a method that only a pymongo collection or database has (``find_one``, ``insert_many``,
  ``update_one``, ``bulk_write``, ``aggregate``, ``create_index``, ``drop_collection``…);
* calls ``.find(…)`` with anything but text to look for (``str.find`` takes a string; a
  collection's ``find`` a filter): write ``needle in text`` or ``str.find(text, x)`` for a search
  by a variable;
* takes a collection from a database: ``db[…]``, ``read_db[…]``, ``database[…]`` (a name, or an
  attribute of that name such as ``runtime.db[…]``), or ``db.pages``-style attributes (a
  database's ``command``, ``client`` and ``name`` are not collections: ``runtime.db.command
  ("ping")`` is a server check).

Each rule is tested on snippets below, so a guard that cannot fail fails here first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ("tracker", "spiders", "pipelines")
STORES = ROOT / "tracker" / "stores"

COLLECTION_METHODS = frozenset(
    {
        "aggregate",
        "aggregate_raw_batches",
        "bulk_write",
        "count_documents",
        "create_collection",
        "create_index",
        "create_indexes",
        "create_search_index",
        "delete_many",
        "delete_one",
        "distinct",
        "drop_collection",
        "drop_index",
        "drop_indexes",
        "estimated_document_count",
        "find_one",
        "find_one_and_delete",
        "find_one_and_replace",
        "find_one_and_update",
        "find_raw_batches",
        "get_collection",
        "index_information",
        "insert_many",
        "insert_one",
        "list_collection_names",
        "list_collections",
        "list_indexes",
        "replace_one",
        "update_many",
        "update_one",
    }
)
DATABASE_NAMES = frozenset({"db", "read_db", "database"})
DATABASE_ATTRIBUTES = frozenset({"command", "client", "name"})  # not collections


def _database(node: ast.expr) -> bool:
    """``db``, ``read_db``, ``database``, or an attribute so named (``runtime.db``)."""
    if isinstance(node, ast.Name):
        return node.id in DATABASE_NAMES
    return isinstance(node, ast.Attribute) and node.attr in DATABASE_NAMES


def _text(node: ast.expr) -> bool:
    """An expression that is plainly a string: a literal, an f-string, ``"sep".join(…)``, or
    a ``+`` of those."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _text(node.left) or _text(node.right)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "join"
        and _text(node.func.value)
    )


def mongo_operations(source: str, filename: str = "<snippet>") -> list[tuple[int, str]]:
    """``(line, what)`` of every MongoDB collection operation or collection taken in
    ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in COLLECTION_METHODS:
                found.append((node.lineno, f".{method}()"))
            elif (
                method == "find"
                # str.find(text, x); a compiled JSONPath's jsonpath.find(data) (book sources)
                and not (
                    isinstance(node.func.value, ast.Name)
                    and node.func.value.id in ("str", "jsonpath")
                )
                and not (node.args and _text(node.args[0]) and not node.keywords)
            ):
                found.append((node.lineno, ".find()"))
        elif isinstance(node, ast.Subscript) and _database(node.value):
            found.append((node.lineno, f"{ast.unparse(node.value)}[…]"))
        elif (
            isinstance(node, ast.Attribute)
            and _database(node.value)
            and node.attr not in DATABASE_ATTRIBUTES
        ):
            found.append((node.lineno, ast.unparse(node)))
    return sorted(found)


def checked_files() -> list[Path]:
    return sorted(
        path
        for folder in CHECKED
        for path in (ROOT / folder).rglob("*.py")
        if STORES not in path.parents
    )


def test_no_mongodb_collection_operation_outside_the_stores():
    outside = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in checked_files()
        for line, what in mongo_operations(path.read_text(encoding="utf-8"), str(path))
    ]
    assert outside == [], "MongoDB is reached outside tracker/stores/ (add a store method):\n" + (
        "\n".join(outside)
    )


def test_the_guard_reads_every_package():
    files = {path.relative_to(ROOT).parts[0] for path in checked_files()}
    assert files == set(CHECKED)
    assert not any(STORES in path.parents for path in checked_files())


@pytest.mark.parametrize(
    "snippet",
    [
        'db["crawl_runs"].insert_one(record)',
        "runtime.db['pages'].find({}, {'n': 1})",
        "self.runtime.read_db['masters']",
        "database[settings.master_source_collection]",
        "self.collection.find(query, sort=[('_id', 1)], batch_size=500)",
        "masters.find(alive, fields)",
        "self.runs.find_one({'job': job})",
        "self.users.update_one({'_id': name}, {'$set': fields}, upsert=True)",
        "collection.create_index([('updated_at', 1), ('_id', 1)])",
        "reports.estimated_document_count()",
        "matches.aggregate([{'$group': {'_id': '$url'}}])",
        "runtime.db.pages.count_documents({})",
        "self.db.matches",
        "found = things.find()",
        "client.tracker.drop_collection('pages')",
    ],
)
def test_the_guard_finds_collection_operations(snippet):
    assert mongo_operations(snippet), snippet


@pytest.mark.parametrize(
    "snippet",
    [
        'text.find("{")',
        'scan.find("\\n", end)',
        'library.find("\\n".join(joined))',
        "str.find(text, needle)",
        "runtime.db.command('ping')",
        "store = PageStore(runtime.db)",
        "ReportStore(self.db).days(days)",
        "element.drop()",
        "settings['mongo_db']",
    ],
)
def test_the_guard_leaves_other_code_alone(snippet):
    assert mongo_operations(snippet) == [], snippet
