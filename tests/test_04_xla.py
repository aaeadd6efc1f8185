"""Unit tests of course/xla_tools.py, the plumbing of the 04_xla notebook."""

from __future__ import annotations

import logging
import os
import textwrap

import pytest

from course import xla_tools



@pytest.fixture(scope="module")
def tf():
    """TensorFlow, imported by the tests that use it (not at collection: each xdist worker collects
    every module, and most never need TensorFlow in-process)."""
    return pytest.importorskip("tensorflow")


@pytest.mark.tensorflow
def test_count_compilations_counts_new_shapes_not_cached_calls(tf):
    @tf.function(jit_compile=True)
    def double_sum(values):
        return tf.reduce_sum(values * 2.0)

    first = xla_tools.count_compilations(lambda: double_sum(tf.ones([3])))
    cached = xla_tools.count_compilations(lambda: double_sum(tf.ones([3])))
    two_shapes = xla_tools.count_compilations(lambda: [double_sum(tf.ones([4])), double_sum(tf.ones([5]))])
    assert (first.count, cached.count, two_shapes.count) == (1, 0, 2)
    assert float(first.result) == 6.0
    assert len(first.modules) == 1 and "double_sum" in first.modules[0]
    assert len(two_shapes.modules) == 2 and cached.modules == ()


@pytest.mark.tensorflow
def test_count_compilations_sees_no_compilation_without_xla(tf):
    plain = tf.function(lambda values: values + 1.0)
    assert xla_tools.count_compilations(lambda: plain(tf.ones([2]))).count == 0


@pytest.mark.tensorflow
def test_host_events_sees_the_xla_cpu_backend_compile(tf):
    with tf.device("/CPU:0"):
        compiled = tf.function(lambda values: tf.exp(values) * 3.0, jit_compile=True)
        names, result = xla_tools.host_events(lambda: compiled(tf.ones([7])))
        again, _ = xla_tools.host_events(lambda: compiled(tf.ones([7])))
    assert "CpuCompiler::RunBackend" in names and result.shape == (7,)
    assert "CpuCompiler::RunBackend" not in again


@pytest.mark.tensorflow
def test_count_compilations_stops_the_profiler_when_the_callable_fails():
    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        xla_tools.count_compilations(boom)
    assert xla_tools.count_compilations(lambda: 1).result == 1  # the profiler could start again


def test_graph_pass_order_reads_groupings_phases_and_passes(tmp_path):
    prefix = "I0000 00:00:1.000000   123 optimization_registry.cc:70] "
    lines = ["Running optimization phase 36", "Running optimization pass: EncapsulateXlaComputationsPass",
             "Graph #nodes 5 #edges 5", "Finished optimization of a group 0",
             "Running optimization phase 9", "Running optimization pass: ClusterScopingPass",
             "Running optimization phase 10", "Running optimization pass: MarkForCompilationPass",
             "Finished optimization of a group 2",
             "Running optimization phase 36", "Running optimization pass: EncapsulateXlaComputationsPass",
             "Finished optimization of a group 0"]
    log = tmp_path / "stderr.log"
    log.write_text("unrelated line\n" + "\n".join(prefix + line for line in lines) + "\n")
    assert xla_tools.graph_pass_order(log) == [
        xla_tools.PassRun("PRE_PLACEMENT", 36, "EncapsulateXlaComputationsPass"),
        xla_tools.PassRun("POST_REWRITE_FOR_EXEC", 9, "ClusterScopingPass"),
        xla_tools.PassRun("POST_REWRITE_FOR_EXEC", 10, "MarkForCompilationPass"),
    ]


@pytest.mark.tensorflow
def test_quiet_tensorflow_restores_the_logger_level(tf):
    logger = tf.get_logger()
    before = logger.level
    logger.setLevel(logging.INFO)
    try:
        with xla_tools.quiet_tensorflow():
            assert logger.level == logging.ERROR
        assert logger.level == logging.INFO
    finally:
        logger.setLevel(before)


def test_restored_environment_puts_back_old_values(monkeypatch):
    monkeypatch.setenv("XLA_TOOLS_TEST_SET", "old")
    monkeypatch.delenv("XLA_TOOLS_TEST_UNSET", raising=False)
    with xla_tools.restored_environment("XLA_TOOLS_TEST_SET", "XLA_TOOLS_TEST_UNSET"):
        os.environ["XLA_TOOLS_TEST_SET"] = "new"
        os.environ["XLA_TOOLS_TEST_UNSET"] = "new"
    assert os.environ["XLA_TOOLS_TEST_SET"] == "old"
    assert "XLA_TOOLS_TEST_UNSET" not in os.environ


def test_graph_dumps_orders_by_suffix_and_keeps_stages_apart(tmp_path):
    for name in ("mark_for_compilation_10.pbtxt", "mark_for_compilation.pbtxt", "mark_for_compilation_2.pbtxt",
                 "mark_for_compilation_annotated.pbtxt", "before_mark_for_compilation.pbtxt"):
        (tmp_path / name).write_text("")
    names = [path.name for path in xla_tools.graph_dumps(tmp_path, "mark_for_compilation")]
    assert names == ["mark_for_compilation.pbtxt", "mark_for_compilation_2.pbtxt", "mark_for_compilation_10.pbtxt"]


def test_hlo_dumps_groups_files_by_module(tmp_path):
    for name in ("module_0000.cluster_0.2.before_optimizations.txt", "module_0000.cluster_0.2.cpu_after_optimizations.txt",
                 "module_0000.cluster_0.2.cpu_after_optimizations-buffer-assignment.txt",
                 "module_0000.cluster_0.2.fusion_kernel_module.ir-with-opt.ll", "module_0000.cluster_0.2.obj-file.fusion.o",
                 "module_0001.jit_f.3.before_optimizations.txt"):
        (tmp_path / name).write_text("")
    first, second = xla_tools.hlo_dumps(tmp_path)
    assert first.module == "cluster_0.2" and second.module == "jit_f.3"
    assert first.after_optimizations.name.endswith("cpu_after_optimizations.txt")
    assert [path.suffix for path in first.llvm_ir + first.object_files] == [".ll", ".o"]
    assert second.after_optimizations is None


@pytest.mark.tensorflow
def test_xla_op_types_knows_which_ops_have_an_xla_kernel():
    ops = xla_tools.xla_op_types("XLA_CPU_JIT")
    assert {"Mul", "Exp", "Sum", "Cast"} <= ops
    assert "AsString" not in ops and "StringJoin" not in ops


@pytest.mark.tensorflow
def test_auto_clustering_process_clusters_reuses_and_reports_errors(tmp_path):
    code = textwrap.dedent("""
        import tensorflow as tf

        @tf.function
        def {name}(values):
            return tf.reduce_sum(tf.exp(values * 2.0 + 1.0) * tf.sin(values), name="{name}_sum")

        print({name}(tf.ones([4, 3])).numpy())
    """)
    with xla_tools.AutoClusteringProcess(tmp_path / "run", dump_xla=True).start() as process:
        first = process.run(code.format(name="first"))
        assert "--tf_xla_auto_jit=2" in first.tf_xla_flags and first.stdout.strip()
        graph = xla_tools.graph_with_node(first.graphs, "mark_for_compilation", "first_sum")
        clusters = {node.attr["_XlaCluster"].s.decode() for node in graph.node if "_XlaCluster" in node.attr}
        assert len(clusters) == 1
        assert xla_tools.hlo_dumps(first.xla), "XLA wrote no module"
        order = [run.name for run in xla_tools.graph_pass_order(process.log)
                 if run.grouping == "POST_REWRITE_FOR_EXEC"]
        assert (order.index("MarkForCompilationPass") < order.index("EncapsulateSubgraphsPass")
                < order.index("BuildXlaOpsPass")), order
        second = process.run(code.format(name="second"))
        xla_tools.graph_with_node(second.graphs, "mark_for_compilation", "second_sum")
        with pytest.raises(xla_tools.SubprocessFailed, match="ZeroDivisionError"):
            process.run("1 / 0")
        assert process.alive
    assert not process.alive
    with pytest.raises(xla_tools.XlaToolsError, match="no mark_for_compilation dump"):
        xla_tools.graph_with_node(first.graphs, "mark_for_compilation", "no_such_node")


def test_auto_clustering_process_hides_the_gpu(tmp_path, monkeypatch):
    """The subprocess must cluster for the CPU on a GPU machine too: it sees no GPU, whatever the
    parent's CUDA_VISIBLE_DEVICES (the worker imports nothing, so this starts no TensorFlow)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with xla_tools.AutoClusteringProcess(tmp_path / "env", dump_xla=False) as process:
        run = process.run("import os\nprint(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))")
    assert run.stdout.strip() == "''", f"expected CUDA_VISIBLE_DEVICES='' in the subprocess, got {run.stdout.strip()}"
