"""What the instructor makes from source/ (each module one thing):

- `release`     release/ generated from source/ by nbgrader, and its drift checked
- `solutions`   the reference solutions, hidden tests removed, for the students past their due date
- `bundle`      the student zip (release, course package, lock; nothing of the instructor's)
- `demo`        a demo class built from the course itself: the solutions typed in, and the blank release
- `course_run`  `make run`: every notebook executed, the release checked, each demo class graded, a report
"""
