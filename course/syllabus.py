"""The ordered assignments of the course and the named profiles that size them.

Every notebook has exactly one cell tagged `parameters`; its defaults suit a student's laptop CPU.
A profile is a named set of overrides papermill injects after that cell:

- `ci`    tiny sizes, seconds per notebook, CPU (`make run`, `make test`)
- `grade` small and deterministic (fixed seeds), injected by the autograder over whatever the
          student left in the parameters cell
- `gpu`   full sizes for the GPU runner; sets REQUIRE_GPU so GPU-only cells become hard checks

The data lives here, in one place, so the runner, the tests, the autograder and the README agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PROFILES = ("ci", "grade", "gpu")


@dataclass(frozen=True)
class Assignment:
    """One nbgrader assignment: folder name = assignment id = notebook name."""

    id: str
    title: str
    teaches: str
    profiles: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def notebook(self) -> str:
        return f"{self.id}.ipynb"

    def parameters(self, profile: str) -> dict[str, Any]:
        """The overrides of `profile` for this assignment (a copy)."""
        if profile not in PROFILES:
            raise UnknownProfileError(profile)
        return dict(self.profiles.get(profile, {}))


class UnknownProfileError(KeyError):
    def __init__(self, profile: str):
        super().__init__(profile)
        self.profile = profile

    def __str__(self) -> str:
        return f"unknown profile {self.profile!r}; the profiles are {', '.join(PROFILES)}"


class UnknownAssignmentError(KeyError):
    def __init__(self, assignment_id: str):
        super().__init__(assignment_id)
        self.assignment_id = assignment_id

    def __str__(self) -> str:
        ids = ", ".join(a.id for a in ASSIGNMENTS)
        return f"unknown assignment {self.assignment_id!r}; the assignments are {ids}"


ASSIGNMENTS: tuple[Assignment, ...] = (
    Assignment(
        id="00_gpu_setup",
        title="GPU setup checks",
        teaches="what is installed, what TensorFlow sees, and why a GPU setup breaks",
        profiles={
            "ci": {"MATMUL_SIZE": 128, "REPEATS": 3},
            "grade": {"MATMUL_SIZE": 128, "REPEATS": 3, "SEED": 0},
            "gpu": {"MATMUL_SIZE": 4096, "REPEATS": 20, "REQUIRE_GPU": True},
        },
    ),
    Assignment(
        id="01_session_vs_eager",
        title="Session vs. eager execution",
        teaches="graphs, Session.run down to DirectSession, tf.function tracing",
    ),
    Assignment(
        id="02_convlstm",
        title="ConvLSTM",
        teaches="the ConvLSTM cell from its gate equations to next-frame prediction",
    ),
    Assignment(
        id="03_bert_finetuning",
        title="BERT fine-tuning",
        teaches="WordPiece, MLM and NSP, a tiny BERT pretrained and fine-tuned offline",
    ),
    Assignment(
        id="04_xla",
        title="XLA",
        teaches="what XLA compiles, fuses and recompiles, measured",
    ),
    Assignment(
        id="05_tf_trt",
        title="TF-TRT",
        teaches="TF-TRT, why current wheels lack it, and inference optimisation that runs everywhere",
    ),
)


def get(assignment_id: str) -> Assignment:
    for assignment in ASSIGNMENTS:
        if assignment.id == assignment_id:
            return assignment
    raise UnknownAssignmentError(assignment_id)


def ids() -> list[str]:
    return [assignment.id for assignment in ASSIGNMENTS]
