"""A hostile class through the real CLI: every student gets a row with the right status, honest ones
get full marks, nothing hidden reaches the feedback, and the submissions folder is left byte-identical."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.authoring import demo
from autograder.nbgrader_setup.workspace import Workspace
from tests import notebooks

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ASSIGNMENT = "00_gpu_setup"
NAME = f"{ASSIGNMENT}.ipynb"

pytestmark = pytest.mark.grading


def _cell(notebook, grade_id: str):
    return next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


# Looks for what grading keeps next to the kernel: nbgrader's copy of the notebook (with the hidden
# tests), the source, the gradebook, other students' jobs, the submissions folder (BASE: the test's).
PROBER = """
import glob, os
places = ['../../../source/00_gpu_setup/00_gpu_setup.ipynb', *glob.glob('*.ipynb'),
          *glob.glob('../**/*.ipynb', recursive=True), *glob.glob('BASE/**/*.ipynb', recursive=True),
          *glob.glob('BASE/**/gradebook.db', recursive=True), *glob.glob('/tmp/**/gradebook.db', recursive=True),
          *glob.glob(os.path.expanduser('~/**/*.ipynb'), recursive=True)]
for place in places:
    try:
        with open(place) as handle:
            print('FO' + 'UND', place, handle.read())
    except OSError as error:
        print('closed', place, error)
print('PROBE' + '-DONE')
"""


FILLER = """
import errno, os
chunk, written = b'x' * 2**24, 0
try:
    with open('fill', 'wb') as handle:
        while written < 2**31:
            handle.write(chunk)
            handle.flush()
            written += len(chunk)
except OSError as error:
    print('FILLED', errno.errorcode[error.errno], written // 2**20, 'MiB')
os.remove('fill')
"""
LIMITS = ["--workers", "2", "--timeout", "25", "--memory-limit", "1.5", "--disk-limit", "0.125", "--task-limit", "200",
          "--cpu-limit", "100"]  # a CPU limit far above what an honest kernel uses: it grades as before


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    course = base / "course"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copyfile(ROOT / "nbgrader_config.py", course / "nbgrader_config.py")
    nbformat.write(notebooks.tiny_assignment(), course / "source" / ASSIGNMENT / NAME)
    releaser = Workspace(base / "release-ws", ASSIGNMENT)
    releaser.create(course / "source" / ASSIGNMENT)
    released = nbformat.read(releaser.release_dir() / NAME, as_version=4)
    honest = demo.type_in_solutions(released, nbformat.read(course / "source" / ASSIGNMENT / NAME, as_version=4))
    good = "def double(value):\n    return value + value\n"

    subs = base / "submissions"
    subs.mkdir()

    def put(student: str, notebook=None, raw: bytes | None = None, name: str = NAME):
        folder = subs / student
        folder.mkdir()
        if raw is not None:
            (folder / name).write_bytes(raw)
        else:
            nbformat.write(notebook, folder / name)

    put("honest", honest)
    put("other honest", notebooks.answered(released, good))                     # a different correct answer
    put("Zoë renamed", notebooks.answered(released, good), name="00_gpu_setup (1).ipynb")
    with zipfile.ZipFile(subs / "zipped.zip", "w") as bundle:
        bundle.writestr(f"zipped/{NAME}", nbformat.writes(notebooks.answered(released, good)))
    with zipfile.ZipFile(subs / "traversal.zip", "w") as bundle:
        bundle.writestr(f"../../{NAME}", nbformat.writes(honest))
    put("truncated", raw=nbformat.writes(honest).encode()[:200])
    put("binary", raw=os.urandom(2048))
    put("blank", released)
    edited = nbformat.from_dict(released)
    _cell(edited, "test_double").source = "assert True"
    _cell(edited, "test_profile").metadata["nbgrader"]["points"] = 100
    test_noise = _cell(edited, "test_noise")
    test_noise.cell_type = "markdown"
    test_noise.pop("outputs", None)
    test_noise.pop("execution_count", None)
    edited.cells = [cell for cell in edited.cells if cell.metadata.get("nbgrader", {}).get("grade_id") != "test_profile"]
    put("test tamperer", edited)
    # never returns; it blocks rather than spins, so it does not take a core of the test machine
    # away from the other tests for the whole timeout (the bound is the wall clock either way).
    # It blocks before `double` exists, so the test cells after the interrupt fail at once instead
    # of each waiting out the timeout again.
    put("hanger", notebooks.answered(released, "import threading\n\nthreading.Event().wait()\n\ndef double(value):\n    return value + value\n"))
    put("crasher", notebooks.answered(released, "import os\nos._exit(1)\n"))
    # tampers, then hangs: the tamper finding must survive the timeout (both in the reason)
    put("tampering hanger", notebooks.answered(released, "import builtins\nbuiltins.isinstance = lambda *args: True\n"
                                               "import threading\n\nthreading.Event().wait()\n"))
    put("hog", notebooks.answered(released, "blob = bytearray(3 * 2**30)\nfor i in range(0, len(blob), 4096):\n    blob[i] = 1\n"))
    put("noisy", notebooks.answered(released, good + "import warnings\nwarnings.warn('loud')\nprint('x' * 50_000_000)\n"))
    put("prober", notebooks.answered(released, good + PROBER.replace("BASE", str(base))))
    # the sandbox's bounds: more processes than --task-limit; /tmp (the working folder's file system)
    # filled to its --disk-limit, then a correct answer (RLIMIT_CPU is tested in test_sandbox.py: how
    # many CPU-seconds a spinner gets in 25 s of wall clock depends on the machine's load); the forker
    # keeps its 300 processes while its cell runs on (a notebook that ends at once is killed whole with
    # its sandbox when its last cell answers, before the watchdog's next look at the tree)
    put("forker", notebooks.answered(released, "import subprocess, threading\nsleepers = [subprocess.Popen(['sleep', '60']) "
                                     "for _ in range(300)]\nthreading.Event().wait(60)\n"))
    put("filler", notebooks.answered(released, FILLER + good))
    put("patcher", notebooks.answered(released, "import builtins\nbuiltins.AssertionError = type('Quiet', (Exception,), {})\n"
                                    "def double(value):\n    return -1\n"))

    before = {p.relative_to(subs): p.read_bytes() for p in subs.rglob("*") if p.is_file()}
    done = subprocess.run(
        [str(BIN / "autograder"), "grade", ASSIGNMENT, "--submissions", str(subs), "--out", str(base / "out"),
         *LIMITS],
        cwd=course, capture_output=True, text=True, timeout=900,
        env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"))
    after = {p.relative_to(subs): p.read_bytes() for p in subs.rglob("*") if p.is_file()}
    with (base / "out" / "grades.csv").open(newline="", encoding="utf-8") as handle:
        rows = {row["student_id"]: row for row in csv.DictReader(handle)}
    return {"done": done, "rows": rows, "before": before, "after": after, "out": base / "out",
            "course": course, "subs": subs}


EXPECTED = {
    "honest": ("graded", 6), "other honest": ("graded", 6), "Zoë renamed": ("graded", 6), "zipped": ("graded", 6),
    "traversal": ("invalid", 0), "truncated": ("invalid", 0), "binary": ("invalid", 0), "blank": ("graded", 0),
    "test tamperer": ("graded", 0), "hanger": ("timeout", 0), "crasher": ("error", 0), "hog": ("error", 0),
    "noisy": ("graded", 6), "prober": ("flagged", 6), "patcher": ("flagged", 0), "tampering hanger": ("flagged", 0),
    # as root the kernel ignores RLIMIT_NPROC and the watchdog ends the run; otherwise the 201st fork fails
    "forker": ("error", 0) if os.geteuid() == 0 else ("graded", 0),
    "filler": ("graded", 6),
}


def test_the_run_exits_0_and_every_student_has_a_row(hostile):
    assert hostile["done"].returncode == 0, hostile["done"].stdout[-3000:] + hostile["done"].stderr[-3000:]
    # every kernel had a bwrap sandbox of its own
    assert "INFO autograder: kernel sandbox: bwrap, one per student" in hostile["done"].stderr, hostile["done"].stderr[:2000]
    assert set(hostile["rows"]) == set(EXPECTED)


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_status_and_score(hostile, student):
    row = hostile["rows"][student]
    status, score = EXPECTED[student]
    assert (row["status"], float(row["score"])) == (status, score), row
    assert float(row["max_score"]) == 6, row
    if status != "graded":
        assert row["reason"], f"{student}: status {status} without a reason"


def test_reasons_say_what_happened(hostile):
    rows = hostile["rows"]
    assert "memory" in rows["hog"]["reason"]
    assert "outside the extraction folder" in rows["traversal"]["reason"]
    assert "builtins.AssertionError" in rows["patcher"]["reason"]
    assert "course files" in rows["prober"]["reason"]
    assert "builtins.isinstance" in rows["tampering hanger"]["reason"], rows["tampering hanger"]
    assert "then timeout" in rows["tampering hanger"]["reason"] or "then error" in rows["tampering hanger"]["reason"]
    if os.geteuid() == 0:
        assert "process limit exceeded: more than 200" in rows["forker"]["reason"], rows["forker"]


def test_the_sandbox_bounds_the_disk(hostile):
    """/tmp, where the working folder is, filled up at its --disk-limit (128 MiB), and grading went on."""
    text = notebooks.squashed_text((hostile["out"] / "feedback" / "filler.html").read_text(encoding="utf-8"))
    import re

    filled = re.search(r"FILLED(ENOSPC|EFBIG)(\d+)MiB", text)  # squashed: no whitespace
    assert filled, text[:2000]
    assert 64 <= int(filled.group(2)) <= 128, filled.group(0)


def test_submissions_folder_is_byte_identical(hostile):
    assert hostile["before"] == hostile["after"]


def test_feedback_is_small_and_hides_hidden_tests(hostile):
    pages = list((hostile["out"] / "feedback").glob("*.html"))
    assert len(pages) >= 8
    for page in pages:
        if page.stem == "prober":
            continue  # see test_a_prober_cannot_read_the_source
        assert page.stat().st_size < 2_000_000, f"{page.name}: {page.stat().st_size} bytes"
        text = notebooks.squashed_text(page.read_text(encoding="utf-8"))
        assert "double(-7)" not in text and "HIDDENTESTS" not in text, page.name


def test_a_prober_sees_nothing_of_the_grading_or_the_class(hostile):
    """The kernel runs in the sandbox: no source, no gradebook, no other student, no submissions."""
    text = notebooks.squashed_text((hostile["out"] / "feedback" / "prober.html").read_text(encoding="utf-8"))
    assert "double(-7)" not in text and "HIDDENTESTS" not in text
    assert "PROBE-DONE" in text, "the prober did not run to its end"
    assert "FOUND" not in text, text[text.find("FOUND"):][:500]


def test_a_rerun_skips_unchanged_submissions(hostile):
    done = subprocess.run(
        [str(BIN / "autograder"), "grade", ASSIGNMENT, "--submissions", str(hostile["subs"]),
         "--out", str(hostile["out"]), *LIMITS],
        cwd=hostile["course"], capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("(unchanged, not re-graded)") == len(EXPECTED) - 3  # the three invalid ones are re-read
    with (hostile["out"] / "grades.csv").open(newline="", encoding="utf-8") as handle:
        again = {row["student_id"]: row for row in csv.DictReader(handle)}
    strip = lambda rows: {k: {f: v for f, v in r.items() if f != "seconds"} for k, r in rows.items()}
    assert strip(again) == strip(hostile["rows"])
