"""Offline data for the notebooks: generated, or read from files that ship inside installed packages.

The JSON files beside this module are reference tables (loaded by `course.tables`); the modules
generate data sets (e.g. `course.data.moving_digits`, `course.data.text_corpus`). Nothing here
downloads anything.
"""
