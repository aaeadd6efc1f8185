"""How nbgrader runs for the course and for grading (each module one thing):

- `config`          the course's nbgrader configuration, and what grading runs nbgrader with
- `preprocessors/`  the preprocessors the course adds to nbgrader's pipelines
- `kernelspec`      the grading kernel spec (the course kernel through the sandbox provisioner)
- `workspace`       a private nbgrader course directory for one grading run
- `gradebook`       where the gradebook lives (SQLite per workspace, or one PostgreSQL)
- `sanitize`        pages made from a student's notebook carry none of the student's markup
- `code_style`      the colours of the code on a feedback page, readable (Pygments' default, darkened)
- `templates/`      the feedback page (nbgrader's, with waiting answers named, a language and readable CSS)
- `log_capture`     nbgrader's own error lines, as one reason
"""
