"""A new gradebook made in-process (`autograder.nbgrader_setup.gradebook.create_tables`) is the one nbgrader makes."""

from __future__ import annotations

import sqlite3

import nbformat
import nbgrader.api
import sqlalchemy

from autograder.nbgrader_setup.gradebook import create_tables
from autograder.nbgrader_setup.workspace import tools_on_path
from tests import notebooks


def _contents(path) -> dict[str, object]:
    """nbgrader's tables and indexes, and the migration the database is at. (alembic's own stamp gives
    alembic_version a primary key that nbgrader's hand-made one lacks; alembic reads both alike.)"""
    with sqlite3.connect(path) as connection:
        schema = dict(connection.execute("SELECT name, sql FROM sqlite_master WHERE tbl_name != 'alembic_version'"))
        (version,) = connection.execute("SELECT version_num FROM alembic_version").fetchall()
    return {"schema": schema, "version": version}


def test_the_tables_and_stamp_are_nbgraders_own(tmp_path):
    with tools_on_path():  # nbgrader's way runs `alembic heads` from PATH
        nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'nbgrader.db'}").close()
    create_tables(f"sqlite:///{tmp_path / 'ours.db'}")
    assert _contents(tmp_path / "ours.db") == _contents(tmp_path / "nbgrader.db")
    with nbgrader.api.Gradebook(f"sqlite:///{tmp_path / 'ours.db'}") as gradebook:  # nbgrader opens it as its own
        gradebook.add_student("ada")
        assert [student.id for student in gradebook.students] == ["ada"]


def test_a_database_with_tables_is_left_alone(tmp_path):
    url = f"sqlite:///{tmp_path / 'kept.db'}"
    engine = sqlalchemy.create_engine(url)
    with engine.begin() as connection:
        connection.execute(sqlalchemy.text("CREATE TABLE mine (x INTEGER)"))
    engine.dispose()
    create_tables(url)
    with sqlite3.connect(tmp_path / "kept.db") as connection:
        assert [name for (name,) in connection.execute("SELECT name FROM sqlite_master")] == ["mine"]


def test_generating_an_assignment_starts_no_alembic_subprocess(tmp_path, monkeypatch):
    def refuse() -> str:
        raise AssertionError("nbgrader asked `alembic heads` for the migration head")

    monkeypatch.setattr(nbgrader.api, "get_alembic_version", refuse)
    _, release_nb = notebooks.tiny_course(tmp_path, "00_gpu_setup")  # Workspace.create: nbgrader's GenerateAssignment
    assert nbformat.read(release_nb, as_version=4).cells, "nbgrader generated no release"
