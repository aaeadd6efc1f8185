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
        profiles={
            "ci": {"MATMUL_SIZE": 128, "CACHE_REPEATS": 3, "CHAIN_LENGTHS": [1, 4, 16, 64, 256], "REPEATS": 10,
                   "WARMUP": 2},
            "grade": {"MATMUL_SIZE": 128, "CACHE_REPEATS": 3, "CHAIN_LENGTHS": [1, 4, 16, 64, 256], "REPEATS": 10,
                      "WARMUP": 2, "SEED": 0},
            "gpu": {"MATMUL_SIZE": 1024, "CACHE_REPEATS": 10, "CHAIN_LENGTHS": [1, 4, 16, 64, 256, 1024],
                    "REPEATS": 50, "WARMUP": 5, "REQUIRE_GPU": True},
        },
    ),
    Assignment(
        id="02_convlstm",
        title="ConvLSTM",
        teaches="the ConvLSTM cell from its gate equations to next-frame prediction",
        profiles={
            "ci": {"TRAIN_SEQUENCES": 64, "TEST_SEQUENCES": 64, "FILTERS": 12, "EPOCHS": 5, "BATCH_SIZE": 8,
                   "GREY_SEQUENCES": 16, "GREY_EPOCHS": 1, "HEAD_EPOCHS": 60, "TIMING_LENGTHS": [2, 4, 8],
                   "TIMING_REPEATS": 3},
            "grade": {"TRAIN_SEQUENCES": 64, "TEST_SEQUENCES": 64, "FILTERS": 12, "EPOCHS": 5, "BATCH_SIZE": 8,
                      "GREY_SEQUENCES": 16, "GREY_EPOCHS": 1, "HEAD_EPOCHS": 60, "TIMING_LENGTHS": [2, 4, 8],
                      "TIMING_REPEATS": 3, "SEED": 0},
            "gpu": {"TRAIN_SEQUENCES": 256, "TEST_SEQUENCES": 256, "FILTERS": 24, "EPOCHS": 15, "BATCH_SIZE": 16,
                    "GREY_SEQUENCES": 256, "GREY_EPOCHS": 10, "HEAD_EPOCHS": 300, "TIMING_LENGTHS": [2, 4, 8, 16, 32],
                    "TIMING_REPEATS": 20, "REQUIRE_GPU": True},
        },
    ),
    Assignment(
        id="03_bert_finetuning",
        title="BERT fine-tuning",
        teaches="WordPiece, MLM and NSP, a tiny BERT pretrained and fine-tuned offline",
        profiles={
            "ci": {"PRETRAIN_PAIRS": 2048, "PRETRAIN_EPOCHS": 2, "TASK_TRAIN_SIZE": 1600,
                   "TASK_TEST_SIZE": 300, "FINE_TUNE_EPOCHS": 6, "CURVE_SIZES": [16], "CURVE_SEEDS": 2,
                   "CURVE_STEPS": 60},
            "grade": {"PRETRAIN_PAIRS": 4096, "PRETRAIN_EPOCHS": 4, "TASK_TRAIN_SIZE": 1600,
                      "TASK_TEST_SIZE": 300, "FINE_TUNE_EPOCHS": 6, "CURVE_SIZES": [16, 64], "CURVE_SEEDS": 1,
                      "CURVE_STEPS": 60, "SEED": 0},
            "gpu": {"NUM_LAYERS": 4, "NUM_HEADS": 4, "HIDDEN_DIM": 128, "INTERMEDIATE_DIM": 512,
                    "PRETRAIN_PAIRS": 16384, "PRETRAIN_EPOCHS": 8, "TASK_TRAIN_SIZE": 4000,
                    "CURVE_SIZES": [16, 32, 64, 128, 256], "CURVE_SEEDS": 10,
                    "FINE_TUNE_EPOCHS": 8, "FINE_TUNE_LEARNING_RATE": 5e-4, "REQUIRE_GPU": True},
        },
    ),
    Assignment(
        id="04_xla",
        title="XLA",
        teaches="what XLA compiles, fuses and recompiles, measured",
        profiles={
            "ci": {"SIZES": [2**10, 2**14, 2**18], "REPEATS": 3, "WARMUP": 1, "COMPILE_REPEATS": 2,
                   "SHAPE_COUNT": 4, "KERAS_SAMPLES": 64},
            "grade": {"SIZES": [2**10, 2**14], "REPEATS": 3, "WARMUP": 1, "COMPILE_REPEATS": 2,
                      "SHAPE_COUNT": 4, "KERAS_SAMPLES": 64, "SEED": 0},
            "gpu": {"SIZES": [2**12, 2**14, 2**16, 2**18, 2**20, 2**22, 2**24], "REPEATS": 20, "WARMUP": 3,
                    "COMPILE_REPEATS": 5, "SHAPE_COUNT": 8, "KERAS_SAMPLES": 4096, "REQUIRE_GPU": True},
        },
    ),
    Assignment(
        id="05_tf_trt",
        title="TF-TRT",
        teaches="TF-TRT, why current wheels lack it, and inference optimisation that runs everywhere",
        profiles={
            "ci": {"IMAGE_SIZE": 16, "WIDTH": 8, "BATCH_SIZES": [1, 8], "WARMUP": 2, "REPEATS": 12,
                   "CALIBRATION_BATCHES": 2},
            "grade": {"IMAGE_SIZE": 16, "WIDTH": 8, "BATCH_SIZES": [1, 8], "WARMUP": 2, "REPEATS": 12,
                      "CALIBRATION_BATCHES": 2, "SEED": 0},
            "gpu": {"IMAGE_SIZE": 64, "WIDTH": 32, "BATCH_SIZES": [1, 8, 32, 128], "WARMUP": 10, "REPEATS": 100,
                    "CALIBRATION_BATCHES": 16, "REQUIRE_GPU": True},
        },
    ),
)


def get(assignment_id: str) -> Assignment:
    for assignment in ASSIGNMENTS:
        if assignment.id == assignment_id:
            return assignment
    raise UnknownAssignmentError(assignment_id)


def ids() -> list[str]:
    return [assignment.id for assignment in ASSIGNMENTS]
