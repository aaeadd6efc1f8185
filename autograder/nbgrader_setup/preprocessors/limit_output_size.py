"""Cap the size of every output, so a 50 MB print gives a small autograded notebook and feedback.

nbgrader's `LimitOutput` counts lines; one enormous line passes it. This counts characters, per
output, and replaces oversized rich outputs (images, HTML) with a note.
"""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Bool, Integer

NOTE = "\n... [output truncated by the autograder: {dropped:,} more characters]\n"


class LimitOutputSize(NbGraderPreprocessor):
    enabled = Bool(True).tag(config=True)
    max_characters = Integer(20_000, help="Characters kept of each text output").tag(config=True)
    max_rich_bytes = Integer(2_000_000, help="Largest image/HTML output kept, in characters").tag(config=True)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                output["text"] = self._cut(output.get("text", ""))
            elif output.get("output_type") in ("execute_result", "display_data"):
                data = output.get("data", {})
                for mime in list(data):
                    value = data[mime] if isinstance(data[mime], str) else ""
                    if mime == "text/plain":
                        data[mime] = self._cut(value)
                    elif len(value) > self.max_rich_bytes:
                        del data[mime]
                        data.setdefault("text/plain", f"[{mime} output of {len(value):,} characters removed by the autograder]")
            elif output.get("output_type") == "error":
                output["evalue"] = self._cut(output.get("evalue", ""))
                output["traceback"] = [self._cut(line) for line in output.get("traceback", [])[:100]]
        return cell, resources

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_characters:
            return text
        return text[: self.max_characters] + NOTE.format(dropped=len(text) - self.max_characters)
