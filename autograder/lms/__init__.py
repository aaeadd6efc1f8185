"""The LMS's and the exchange's side, given plain data (no grading run; grading reads them):

- `downloads`       the file names of an LMS's bulk download, by the LMS's own rules
- `exchange`        what `nbgrader collect` leaves (submitted/, timestamp.txt) and where release_feedback looks
- `roster`          the class list an LMS exports
- `groups`          group rosters, and a group's one result spread to its members
- `moodle_strings`  Moodle's worksheet words in its languages
- `grade_import`    grades.csv as the file the LMS imports, a plug-in class per format (`ImportFormat`)
- `feedback_zip`    the class's feedback pages as one zip for the LMS

Where a change goes: another LMS's grade import file is a subclass of `grade_import.ImportFormat`
registered under the `autograder.lms_formats` entry points (pyproject.toml); its download's names go
in `downloads`.
"""
