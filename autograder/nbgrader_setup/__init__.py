"""How nbgrader runs for the course and for grading (each module one thing):

- `config`          the course's nbgrader configuration, and what grading runs nbgrader with
- `preprocessors/`  the preprocessors the course adds to nbgrader's pipelines
- `kernelspec`      the grading kernel spec (the course kernel through the sandbox provisioner)
- `workspace`       a private nbgrader course directory for one grading run
- `gradebook`       where the gradebook lives (SQLite per workspace, or one PostgreSQL)
- `sanitize`        pages made from a student's notebook carry none of the student's markup
- `log_capture`     nbgrader's own error lines, as one reason
"""
