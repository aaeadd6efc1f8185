"""Where nbgrader's gradebook lives: a SQLite file per course directory (the default), or one
database server (PostgreSQL) that every grader and worker shares.

- `database_problem(url)`: why a `--db` URL cannot hold the gradebook, checked before grading;
- `gradebook_lock(url)`: the lock graders take while nbgrader sets up a shared gradebook (and its
  shared side while they autograde);
- `create_tables(url)`: a new gradebook's tables and migration stamp, made in this process;
- `has_tables(url)`: whether a gradebook was set up there (nbgrader's `Gradebook()` makes one if not).
"""

from __future__ import annotations

import contextlib

import sqlalchemy
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from nbgrader import dbutil
from nbgrader.api import Base

GRADEBOOK_LOCK = 0x6E62677264  # the advisory lock's key: any number the graders agree on ("nbgrd")


def database_problem(db_url: str) -> str | None:
    """Why nbgrader could not keep its gradebook at `db_url` (an SQLAlchemy URL), or None."""
    try:
        engine = sqlalchemy.create_engine(db_url)
    except Exception as error:  # bad URL, missing driver
        return f"--db {db_url!r} is not a usable SQLAlchemy URL: {error}"
    try:
        with engine.connect():
            return None
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"cannot connect to the gradebook database: {first}"
    finally:
        engine.dispose()


@contextlib.contextmanager
def gradebook_lock(db_url: str, *, shared: bool = False):
    """Hold a PostgreSQL advisory lock on a shared gradebook. Setting up an assignment takes it whole:
    creating the tables and recording an assignment are not safe to run twice at once (two graders
    starting together). Autograding takes its shared side (`shared=True`): any number of students
    grade at once, but never while another grader records the assignment, because nbgrader's
    SaveCells removes and re-creates a notebook that has no submission yet, and a submission
    written between its check and its delete breaks the delete (a foreign key). No-op for SQLite."""
    if not db_url.startswith("postgresql"):
        yield
        return
    lock, unlock = ("pg_advisory_lock_shared", "pg_advisory_unlock_shared") if shared else (
        "pg_advisory_lock", "pg_advisory_unlock")
    engine = sqlalchemy.create_engine(db_url)
    try:
        with engine.connect() as connection:
            connection.execute(sqlalchemy.text(f"SELECT {lock}(:key)"), {"key": GRADEBOOK_LOCK})
            try:
                yield
            finally:
                connection.execute(sqlalchemy.text(f"SELECT {unlock}(:key)"), {"key": GRADEBOOK_LOCK})
    finally:
        engine.dispose()


def create_tables(db_url: str) -> None:
    """Give an empty database nbgrader's tables, stamped with its newest migration, as nbgrader's
    `Gradebook()` does for a database without tables; a database that has tables is left alone.

    Same result, without the cost: for a new database `Gradebook()` asks for the migration head by
    running `alembic heads` in a subprocess (nbgrader/api.py, `get_alembic_version`), which imports
    nbgrader again: 4.5 s of a core for each grading run or release. Here alembic reads the same
    scripts (nbgrader's `dbutil.ALEMBIC_DIR`) in this process, in a fifth of a second."""
    engine = sqlalchemy.create_engine(db_url)
    try:
        with engine.begin() as connection:
            if sqlalchemy.inspect(connection).get_table_names():
                return
            Base.metadata.create_all(connection)
            MigrationContext.configure(connection).stamp(ScriptDirectory(dbutil.ALEMBIC_DIR), "heads")
    finally:
        engine.dispose()


def has_tables(db_url: str) -> bool:
    """Whether the database at `db_url` has tables: a gradebook to read, where opening nbgrader's
    `Gradebook()` on a new database would make one (not safe beside a grader making it at once)."""
    engine = sqlalchemy.create_engine(db_url)
    try:
        with engine.connect() as connection:
            return bool(sqlalchemy.inspect(connection).get_table_names())
    finally:
        engine.dispose()
