"""The `course` package: what the notebooks import, and the `course` command.

Modules, one job each (a change goes to the module named for its subject):

- `syllabus`     the ordered assignments and the `ci` / `grade` / `gpu` profiles, as data
- `layout`       where things live in the course directory (source/, release/, build/)
- `runner`       executes notebooks with papermill under a profile, writes build/
- `kernel`       the Jupyter kernel every notebook, papermill, nbval and nbgrader use (and the hub's GPU cap)
- `kernel_log`   a kernel whose own log goes to a file instead of the terminal
- `environment`  facts about this Python, TensorFlow, its build and the devices it sees
- `doctor`       turns those facts into checks (`course doctor`)
- `loader`       the dynamic loader as 00_gpu_setup's loader exercise meets it
- `gpu`          the "skip with a reason on CPU, hard check under the gpu profile" pattern
- `grading`      what the notebooks' test cells use to grade fairly
- `timing`       measurements with warm-up, repeats, median and spread
- `plotting`     small matplotlib helpers so every plot has a title, axes, units and a description
- `contrast`     WCAG's colour contrast, and the least darkening that makes a colour readable
- `templates/`   the executed notebooks' page (nbconvert's lab page with alt text and readable colours)
- `tables`       reference data the notebooks show (tested builds, CUDA architectures, ...)
- `data/`        offline data sets, generated or read from installed packages
- `xla_tools`    XLA plumbing for 04_xla: counting compilations, an auto-clustering subprocess and its dumps
- `calibration`  ONNX Runtime's INT8 calibration and quantisation for 05_tf_trt
- `cli`          the `course` command (prepare, doctor, ...), thin over the modules above

Nothing in this package solves an exercise: it ships to students.
"""

__version__ = "0.1.0"
