"""The `autograder` package: grading a class on top of nbgrader's own machinery."""

import sys

__version__ = "0.1.0"

# jsonschema's optional IRI format checker (rfc3987_syntax) compiles 38 lark grammars when imported,
# about a second in every process that imports nbformat; nothing in grading validates IRIs, and
# nbformat's schema has no such format. Without it jsonschema simply does not check "iri" strings.
sys.modules.setdefault("rfc3987_syntax", None)
