"""The `autograder` package: grading a class on top of nbgrader's own machinery.

Where things are, in layers (each imports only the ones below it; tests/test_architecture.py checks):

- bottom: `errors` (the one base of every error that stops a command), `settings` (every grading
  setting, one trait each), `runfolder` (every path and file of a run, grades.csv's one record),
  `csvfile` (the one CSV reader), `pages` and `templates/` (the HTML the grader writes)
- `nbgrader_setup/`  how nbgrader runs: the course's configuration, the preprocessors, the grading
  kernel spec, the per-run course directory (workspace), the gradebook
- `execution/`       one submission graded: jobs and their worker processes, the watchdog, the kernel
  sandbox and its provisioner, where jobs run (this machine or Dask)
- `lms/`             the LMS's and the exchange's side, given plain data: downloads, rosters, groups,
  grade imports, feedback zips, nbgrader's collected folders
- `grading/`         the class run: `pipeline` keeps the steps (read, plan, execute, settle, show_hand_grades, spread, write);
  each subject has its module (intake, assignment, cache, lateness, overrides, status, report, ...)
- `authoring/`       what the instructor makes from source/: the release, the solutions, the student
  bundle, the demo class and `make run`'s course run
- top: `cli` (the `autograder` command, thin over the library)

A new grades.csv column: a field of `runfolder.GradesLine` and an attribute of the same name on
`grading.results.Row`. A new grading setting: a trait of `settings.GradingSettings` (its option and
`c.GradingSettings.<name>` follow; tag it `grade_key` when it decides a grade).
"""

import sys
from types import ModuleType
from typing import cast

__version__ = "0.1.0"

# jsonschema's optional IRI format checker (rfc3987_syntax) compiles 38 lark grammars when imported,
# about a second in every process that imports nbformat; nothing in grading validates IRIs, and
# nbformat's schema has no such format. Without it jsonschema simply does not check "iri" strings.
# (None in sys.modules is the import system's "not importable"; typeshed types its values as modules only,
# hence the cast.)
cast("dict[str, ModuleType | None]", sys.modules).setdefault("rfc3987_syntax", None)
