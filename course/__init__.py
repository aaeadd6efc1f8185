"""The `course` package: what the notebooks import.

Modules, one job each:

- `syllabus`    the ordered assignments and the `ci` / `grade` / `gpu` profiles, as data
- `layout`      where things live in the course directory (source/, release/, build/)
- `runner`      executes notebooks with papermill under a profile, writes build/
- `environment` facts about this Python, TensorFlow, its build and the devices it sees
- `doctor`      turns those facts into checks (`course doctor`)
- `kernel`      the Jupyter kernel every notebook, papermill, nbval and nbgrader use
- `gpu`         the "skip with a reason on CPU, hard check under the gpu profile" pattern
- `timing`      measurements with warm-up, repeats, median and spread
- `plotting`    small matplotlib helpers so every plot has a title, axes and units
- `tables`      reference data the notebooks show (tested builds, CUDA architectures, ...)
- `data`        offline data sets generated or read from installed packages
- `xla_tools`   XLA plumbing for 04_xla: counting compilations, an auto-clustering subprocess and its dumps

Nothing in this package solves an exercise: it ships to students.
"""

__version__ = "0.1.0"
