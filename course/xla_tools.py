"""Plumbing for the XLA notebook (04_xla): count XLA compilations, run code under XLA's
process-wide flags in a subprocess, and read the dumps and logs those flags write.

    compiled = xla_tools.count_compilations(lambda: scale(x))
    compiled.count, compiled.modules, compiled.result

    clustering = xla_tools.AutoClusteringProcess(Path("build/xla_demo"))
    run = clustering.run(code)          # TensorFlow is imported once, then reused by later runs
    graph = xla_tools.graph_with_node(run.graphs, "mark_for_compilation", "Exp")
    xla_tools.graph_pass_order(clustering.log)   # the graph passes in the order they ran

Why these exist:
- XLA compiles inside the C++ runtime, and TensorFlow has no Python call that says "this call
  compiled". Every XLA executable, XLA:CPU's `CpuExecutable` and XLA:GPU's `GpuExecutable` alike,
  registers its HLO module with `xla::XlaDebugInfoManager` when it is built
  (third_party/xla/xla/service/cpu/cpu_executable.cc, .../gpu/gpu_executable.cc), and TensorFlow's
  profiler exports every module registered while it runs as one entry of its "/host:metadata"
  plane, keyed by the module's unique id (third_party/xla/xla/backends/profiler/cpu/
  metadata_collector.cc). `count_compilations` lists those ids before and while a callable runs;
  the new ids are the executables it built, one per compilation. A cache hit builds nothing.
  The count is the same on CPU and GPU and works for `jit_compile=True` functions and
  auto-clustered graphs alike (the GPU compiler's autotuning builds are not registered:
  gpu_compiler_test.cc checks that).
- `TF_XLA_FLAGS` and `XLA_FLAGS` are parsed once per process (the first time TensorFlow or XLA
  reads a flag), `TF_CPP_VMODULE` when logging starts; `TF_DUMP_GRAPH_PREFIX` is read at every
  dump. XLA:CPU auto-clustering needs `--tf_xla_cpu_global_jit`, so a notebook cannot switch it
  on in its own kernel: `AutoClusteringProcess` runs code in another Python process started with
  the flags set, and says where the dumps and the log went.

Nothing here solves an exercise of the notebook.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import select
import subprocess
import sys
import tempfile
import time
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course.environment import restored_environment  # noqa: F401 - 04 calls xla_tools.restored_environment

# The XSpace plane on which TensorFlow's profiler lists the XLA modules alive during a session
# (tsl::profiler::kMetadataPlaneName); each event metadata is one module, its id the module's
# unique id and its name "<module name>(<id>)".
METADATA_PLANE = "/host:metadata"
_PROGRAM_SUFFIX = re.compile(r"\(\d+\)$")

# Flags that turn auto-clustering on for the CPU (see tensorflow/compiler/jit/flags.cc) and make
# MarkForCompilationPass dump the graph before and after it clusters (before_mark_for_compilation,
# mark_for_compilation, mark_for_compilation_annotated: --tf_xla_clustering_debug sets the pass's
# dump_graphs option, mark_for_compilation_pass.cc). (--tf_xla_auto_jit=1 would do the same:
# mark_for_compilation_pass.cc only compares the level with OFF.)
AUTO_CLUSTERING_FLAGS = ("--tf_xla_auto_jit=2", "--tf_xla_cpu_global_jit", "--tf_xla_clustering_debug")
# EncapsulateSubgraphsPass and BuildXlaOpsPass dump their graphs when their VLOG level is 1 or more
# (`if (VLOG_IS_ON(1)) DumpGraphToFile(...)`; --tf_xla_clustering_debug does not reach them);
# the optimization registry logs every graph pass it runs, with its phase, at VLOG level 1
# (tensorflow/core/common_runtime/optimization_registry.cc).
PASS_VMODULE = "encapsulate_subgraphs_pass=1,build_xla_ops_pass=1,optimization_registry=1"
# The groupings of graph passes, in the order of OptimizationPassRegistry::Grouping
# (tensorflow/core/common_runtime/optimization_registry.h).
PASS_GROUPINGS = ("PRE_PLACEMENT", "POST_PLACEMENT", "POST_REWRITE_FOR_EXEC", "POST_PARTITIONING")
# The graph dumps the passes write, in the order the passes run.
GRAPH_STAGES = ("before_mark_for_compilation", "mark_for_compilation", "mark_for_compilation_annotated",
                "encapsulate_subgraphs_before", "encapsulate_subgraphs_after", "build_xla_ops")


class XlaToolsError(RuntimeError):
    """A helper of this module could not do its job (the message says why)."""


class SubprocessFailed(XlaToolsError):
    """The code run in a subprocess exited with an error."""

    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        tail = "\n".join(line for line in stderr.splitlines() if not _is_log_line(line))[-3000:]
        super().__init__(f"the subprocess exited with {returncode}:\n{tail}")


@dataclass(frozen=True)
class Compilations:
    """What `count_compilations` saw: the number of XLA compilations, the names of the modules
    they built (in the order XLA numbered them) and the callable's result."""

    count: int
    result: Any
    modules: tuple[str, ...] = ()


def _profiled(fn: Callable[[], Any]) -> tuple[dict[int, str], Any]:
    """Run `fn()` under TensorFlow's profiler with every tracer off; return the XLA modules the
    profiler listed on its metadata plane ({unique id: module name}) and `fn`'s result.

    The metadata collector is on by default (ProfileOptions.enable_hlo_proto); host, Python and
    device tracing are off, so nothing but the module list is collected.
    """
    import tensorflow as tf

    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=0, python_tracer_level=0,
                                                       device_tracer_level=0)
    with _profiler("xla_compilations_", options) as spaces:
        result = fn()
    modules: dict[int, str] = {}
    for space in spaces:
        for plane in space.planes:
            if plane.name == METADATA_PLANE:
                for key, meta in plane.event_metadata.items():
                    modules[int(meta.id or key)] = _PROGRAM_SUFFIX.sub("", meta.name)
    return modules, result


# the C++ log lines every profiler session writes (session options, start, stop, where the XSpace
# went): in a notebook ipykernel shows them under the cell, dozens per counted call
_PROFILER_CHATTER = re.compile(r"\b(?:profiler_session|session_manager|save_profile)\.cc:\d+\]")


@contextlib.contextmanager
def _without_profiler_chatter():
    """Hold back the profiler's own log lines written to descriptor 2 in the block; pass on the rest."""
    from course.environment import captured_stderr

    with captured_stderr() as lines:
        yield
    kept = [line for line in lines if not _PROFILER_CHATTER.search(line)]
    if kept:
        sys.stderr.write("\n".join(kept) + "\n")


@contextlib.contextmanager
def _profiler(prefix: str, options=None):
    """TensorFlow's profiler around the block (TensorFlow's Python warnings silenced); yields a list
    that holds the session's XSpaces once the block has ended."""
    import tensorflow as tf

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    spaces: list = []
    with tempfile.TemporaryDirectory(prefix=prefix) as logdir:
        try:
            with _without_profiler_chatter():
                tf.profiler.experimental.start(logdir, options=options)
        except Exception as error:  # the profiler raises plain errors when it is already running
            raise XlaToolsError(f"could not start TensorFlow's profiler ({error}); "
                                "is another profiling session running?") from error
        try:
            with quiet_tensorflow():
                yield spaces
        finally:
            with _without_profiler_chatter():
                tf.profiler.experimental.stop()
        spaces.extend(xplane_pb2.XSpace.FromString(path.read_bytes()) for path in Path(logdir).rglob("*.xplane.pb"))


def count_compilations(fn: Callable[[], Any]) -> Compilations:
    """Call `fn()`; return how many XLA executables it built, i.e. how many XLA compilations it
    caused, on any device.

    Two profiler sessions: one lists the XLA modules alive before `fn` runs, the second runs `fn`
    and lists them again (including modules freed meanwhile). The modules in the second list only
    are the ones `fn` compiled. TensorFlow's Python warnings (e.g. "triggered tf.function
    retracing") are silenced while `fn` runs (`quiet_tensorflow`): they would go to stderr.
    """
    before, _ = _profiled(lambda: None)
    after, result = _profiled(fn)
    new = sorted(set(after) - set(before))
    return Compilations(count=len(new), result=result, modules=tuple(after[key] for key in new))


def host_events(fn: Callable[[], Any]) -> tuple[collections.Counter, Any]:
    """Call `fn()` under TensorFlow's profiler (host tracing at its default level); return how
    often each host event name occurred ({name: count}) and `fn`'s result.

    The host events are the TraceMe annotations of TensorFlow and XLA, e.g. the passes and
    emitters an XLA compilation runs through.
    """
    names: collections.Counter = collections.Counter()
    with _profiler("xla_events_") as spaces:
        result = fn()
    for space in spaces:
        for plane in space.planes:
            if plane.name.startswith("/host:") and plane.name != METADATA_PLANE:
                for line in plane.lines:
                    names.update(plane.event_metadata[event.metadata_id].name for event in line.events)
    return names, result


@dataclass(frozen=True)
class ClusteringRun:
    """Where a run under auto-clustering wrote its dumps, and what the code printed."""

    graphs: Path  # TF_DUMP_GRAPH_PREFIX: GraphDefs before/after each TensorFlow XLA pass
    xla: Path  # XLA_FLAGS=--xla_dump_to: HLO before/after optimisation, LLVM IR, object files
    stdout: str
    seconds: float
    tf_xla_flags: str
    xla_flags: str


# The program the subprocess runs: read one JSON request per line ({"code": ...}), exec the code in
# a fresh namespace with its prints captured, answer one JSON line. TensorFlow is imported once, by
# the first request, and stays loaded for the next ones.
_WORKER = """
import contextlib, io, json, sys, traceback
for line in sys.stdin:
    request = json.loads(line)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            exec(compile(request["code"], "<auto-clustering run>", "exec"), {"__name__": "__main__"})
        reply = {"ok": True, "stdout": captured.getvalue()}
    except BaseException:
        reply = {"ok": False, "stdout": captured.getvalue(), "error": traceback.format_exc()}
    sys.__stdout__.write(json.dumps(reply) + "\\n")
    sys.__stdout__.flush()
"""


class AutoClusteringProcess:
    """A Python subprocess with auto-clustering on for the CPU and every dump switched on.

    The subprocess sees no GPU (CUDA_VISIBLE_DEVICES=""): it places every op on the CPU, so its
    clusters are compiled for XLA_CPU_JIT whether or not the machine has a GPU.
    It gets TF_XLA_FLAGS="--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit
    --tf_xla_clustering_debug" (plus --tf_xla_min_cluster_size when given), TF_DUMP_GRAPH_PREFIX
    = folder/graphs, TF_CPP_VMODULE for the encapsulate and build-ops passes and the optimization
    registry (PASS_VMODULE), TF_CPP_MIN_LOG_LEVEL=0 so that those log lines are written, and (with
    `dump_xla`) XLA_FLAGS="--xla_dump_to=folder/xla"; its stderr (TensorFlow's logs) goes to
    `log` (folder/stderr.log; `graph_pass_order` reads it). It stays alive between `run` calls,
    so TensorFlow is imported once; the dumps of later runs are added to the same folders
    (`graph_with_node` finds a function's graph by a node name).
    `folder` is emptied when the process starts.
    """

    def __init__(self, folder: str | Path, *, min_cluster_size: int | None = None, dump_xla: bool = True,
                 timeout: float = 300):
        self.folder = Path(folder).resolve()
        self.graphs, self.xla = self.folder / "graphs", self.folder / "xla"
        self.log = self.folder / "stderr.log"  # TensorFlow's log lines (stderr) of the subprocess
        flags = list(AUTO_CLUSTERING_FLAGS)
        if min_cluster_size is not None:
            flags.append(f"--tf_xla_min_cluster_size={int(min_cluster_size)}")
        self.tf_xla_flags = " ".join(flags)
        self.xla_flags = f"--xla_dump_to={self.xla}" if dump_xla else ""
        self.timeout = timeout
        self._process: subprocess.Popen | None = None
        self._log = None
        self._pending = 0  # requests sent whose answers have not been read yet

    def start(self, *, preload: bool = True) -> "AutoClusteringProcess":
        """Start the subprocess now (`run` starts it when needed); with `preload`, it begins
        importing TensorFlow at once, in the background, so that the first `run` waits less."""
        if not self.alive:
            self._start()
            if preload:
                self._send("import tensorflow")
        return self

    def _start(self) -> None:
        for sub in (self.graphs, self.xla):
            if sub.exists():
                for path in sorted(sub.rglob("*"), reverse=True):
                    path.unlink() if path.is_file() else path.rmdir()
            sub.mkdir(parents=True, exist_ok=True)
        # Level 0: the VLOG lines of PASS_VMODULE are INFO messages and must reach stderr.log.
        # CUDA_VISIBLE_DEVICES="": the subprocess sees no GPU, so its ops are placed on the CPU and
        # clustered for XLA_CPU_JIT on any machine (what the notebook's text, op list and dumps describe),
        # and it leaves the GPU's memory to the notebook's kernel.
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0", "CUDA_VISIBLE_DEVICES": "",
               "TF_XLA_FLAGS": self.tf_xla_flags, "TF_DUMP_GRAPH_PREFIX": str(self.graphs),
               "TF_CPP_VMODULE": PASS_VMODULE, "PYTHONUNBUFFERED": "1"}
        if self.xla_flags:
            env["XLA_FLAGS"] = self.xla_flags
        self._log = open(self.log, "w", encoding="utf-8")
        self._process = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._log, text=True, env=env,
                                         cwd=self.folder)
        weakref.finalize(self, _stop, self._process, self._log)

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def run(self, code: str) -> ClusteringRun:
        """Execute `code` in the subprocess; return the dump folders and what it printed."""
        start = time.perf_counter()
        if not self.alive:
            self._start()
        self._send(code)
        reply = {}
        while self._pending:  # answers come in order: a preload's first, then this one's
            reply = self._receive()
            if not reply["ok"]:
                raise SubprocessFailed(1, reply["stdout"], reply["error"])
        return ClusteringRun(self.graphs, self.xla, reply["stdout"], time.perf_counter() - start,
                             self.tf_xla_flags, self.xla_flags)

    def _send(self, code: str) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps({"code": code}) + "\n")
        self._process.stdin.flush()
        self._pending += 1

    def _receive(self) -> dict:
        assert self._process is not None and self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], self.timeout)
        line = self._process.stdout.readline() if ready else ""
        if not line:
            self.close()
            raise SubprocessFailed(-1, "", f"no answer within {self.timeout} s (see {self.folder / 'stderr.log'})")
        self._pending -= 1
        return json.loads(line)

    def close(self) -> None:
        """Stop the subprocess (the dumps stay)."""
        if self._process is not None:
            _stop(self._process, self._log)
            self._process = None
            self._pending = 0

    def __enter__(self) -> "AutoClusteringProcess":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


def _stop(process: subprocess.Popen, log) -> None:
    """Terminate the subprocess (it holds no state worth a slow TensorFlow shutdown)."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if log is not None and not log.closed:
        log.close()


def auto_clustering_run(code: str, folder: str | Path, *, min_cluster_size: int | None = None,
                        dump_xla: bool = True, timeout: float = 300) -> ClusteringRun:
    """Run `code` once in a fresh `AutoClusteringProcess` (see there) and stop the process."""
    with AutoClusteringProcess(folder, min_cluster_size=min_cluster_size, dump_xla=dump_xla,
                               timeout=timeout) as process:
        return process.run(code)


def graph_dumps(folder: str | Path, stage: str) -> list[Path]:
    """The dumps of one pass stage (e.g. "mark_for_compilation"), in the order they were written.

    TensorFlow names them `<stage>.pbtxt`, `<stage>_1.pbtxt`, ...: one per graph the pass saw
    (every tf.function, and the one-op functions eager execution builds).
    """
    pattern = re.compile(rf"^{re.escape(stage)}(?:_(\d+))?\.pbtxt$")
    found = []
    for path in Path(folder).iterdir():
        match = pattern.match(path.name)
        if match:
            found.append((int(match.group(1) or 0), path))
    return [path for _, path in sorted(found)]


def load_graph(path: str | Path):
    """A `tf.compat.v1.GraphDef` read from a text dump (.pbtxt)."""
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    graph = graph_pb2.GraphDef()
    text_format.Parse(Path(path).read_text(encoding="utf-8"), graph)
    return graph


def graph_with_node(folder: str | Path, stage: str, node_name: str):
    """The GraphDef of `stage` that holds a node called `node_name` (the last such dump)."""
    matches = [graph for graph in map(load_graph, graph_dumps(folder, stage))
               if any(node.name == node_name for node in graph.node)]
    if not matches:
        raise XlaToolsError(f"no {stage} dump in {folder} has a node named {node_name!r}")
    return matches[-1]


@dataclass(frozen=True)
class PassRun:
    """One graph optimization pass as the optimization registry ran it."""

    grouping: str  # one of PASS_GROUPINGS
    phase: int  # the phase number it was registered with (REGISTER_OPTIMIZATION)
    name: str  # the pass's class name, e.g. "MarkForCompilationPass"


_REGISTRY_LINE = re.compile(r"optimization_registry\.cc:\d+\] (.*)$")


def graph_pass_order(log: str | Path) -> list[PassRun]:
    """The graph passes TensorFlow ran, in order, read from a log written with
    TF_CPP_VMODULE=optimization_registry=1 (an `AutoClusteringProcess`'s `log`).

    The registry logs "Running optimization phase <n>" and "Running optimization pass: <name>"
    for every pass of a grouping, then "Finished optimization of a group <g>" (g indexes
    PASS_GROUPINGS). It runs the groupings once per graph; each pass is listed once, where it
    first ran.
    """
    runs: list[PassRun] = []
    pending: list[tuple[int, str]] = []
    phase = -1
    for line in Path(log).read_text(encoding="utf-8", errors="replace").splitlines():
        match = _REGISTRY_LINE.search(line)
        if not match:
            continue
        message = match.group(1).strip()
        if message.startswith("Running optimization phase "):
            phase = int(message.rsplit(" ", 1)[1])
        elif message.startswith("Running optimization pass: "):
            pending.append((phase, message.split(": ", 1)[1]))
        elif message.startswith("Finished optimization of a group "):
            group = int(message.rsplit(" ", 1)[1])
            grouping = PASS_GROUPINGS[group] if 0 <= group < len(PASS_GROUPINGS) else str(group)
            for pass_phase, name in pending:
                run = PassRun(grouping, pass_phase, name)
                if run not in runs:
                    runs.append(run)
            pending = []
    return runs


@dataclass(frozen=True)
class HloDump:
    """The files XLA wrote for one compiled module (XLA_FLAGS=--xla_dump_to)."""

    module: str
    before_optimizations: Path | None
    after_optimizations: Path | None
    llvm_ir: tuple[Path, ...]
    object_files: tuple[Path, ...]


def hlo_dumps(folder: str | Path) -> list[HloDump]:
    """One `HloDump` per module in an XLA dump folder, in the order XLA numbered them.

    XLA prefixes every file of a module with `module_<number>.<module name>.`.
    """
    modules: dict[str, list[Path]] = {}
    for path in sorted(Path(folder).iterdir()):
        match = re.match(r"^(module_\d+)\.", path.name)
        if match:
            modules.setdefault(match.group(1), []).append(path)
    dumps = []
    for prefix, paths in modules.items():
        def pick(suffix: str) -> Path | None:
            hits = [path for path in paths if path.name.endswith(suffix)]
            return hits[0] if hits else None
        before = pick(".before_optimizations.txt")
        name = before.name[len(prefix) + 1:-len(".before_optimizations.txt")] if before else prefix
        dumps.append(HloDump(
            module=name,
            before_optimizations=before,
            after_optimizations=pick("after_optimizations.txt"),
            llvm_ir=tuple(path for path in paths if path.suffix == ".ll"),
            object_files=tuple(path for path in paths if path.suffix == ".o"),
        ))
    return dumps


def xla_op_types(device_type: str = "XLA_CPU_JIT") -> frozenset[str]:
    """The TensorFlow op types that have a kernel for an XLA JIT device ("XLA_CPU_JIT", "XLA_GPU_JIT").

    TensorFlow registers those kernels (tensorflow/compiler/tf2xla/xla_op_registry.cc) the first
    time XLA is used in a process, so this runs one tiny jit-compiled function first.
    """
    import tensorflow as tf
    from tensorflow.python.framework import kernels

    with tf.device("/CPU:0"):
        tf.function(lambda value: value + 1, jit_compile=True)(tf.constant(0.0))
    return frozenset(kernel.op for kernel in kernels.get_all_registered_kernels().kernel
                     if kernel.device_type == device_type)


@contextlib.contextmanager
def quiet_tensorflow():
    """Silence TensorFlow's Python logger and Python warnings for a block (e.g. retracing warnings).

    Both go to stderr; the logger's level and the warning filters are restored afterwards.
    """
    import tensorflow as tf

    logger = tf.get_logger()
    level = logger.level
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logger.setLevel("ERROR")
        try:
            yield
        finally:
            logger.setLevel(level)


_LOG_LINE = re.compile(r"^([IWEF]\d{4} \d{2}:\d{2}:\d+\.\d+\s+\d+ [\w./-]+:\d+\]|WARNING: All log messages before)")


def _is_log_line(line: str) -> bool:
    return bool(_LOG_LINE.match(line))
