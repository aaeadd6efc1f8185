"""A class graded: `pipeline.grade_class` keeps the steps (read, plan, execute, settle, show_hand_grades, spread, write); each
subject has a module of its own, where a change to it goes:

- `assignment`      the assignment's source notebooks, their points, the hash its workspace comes from
- `intake`          the class read without changing it (folders, LMS downloads, nbgrader's submitted/), intake.csv
- `tamper`          solution code that reaches outside the exercise
- `cache`           rows kept between runs, keyed on the submission, the course's files and the settings
- `status`          a row's status, decided in one place
- `results`         `Row` and `ClassResult`, what grading gives
- `overrides`       points set by hand (a file); `formgrade`: nbgrader's formgrader and its hand grades
- `feedback_pages`  feedback pages made again with the hand grades on them
- `lateness`        the term (due dates, extensions, submission times) and the late penalty
- `similarity`      similar submissions (flags, not grades)
- `grades_csv`      grades.csv and max_points.csv written; `report`: report.html
"""
