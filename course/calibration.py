"""ONNX Runtime's own INT8 calibration and quantisation, run on NumPy arrays (05_tf_trt).

The notebook's INT8 exercise runs `onnxruntime.quantization`'s calibraters on one tensor and chooses
a calibration for an error budget; these helpers give ONNX Runtime's answer for the same arrays, so
that a cell (or a test) can put the two side by side. `ort_range` answers the first part of the
exercise, so its test hides it while the student's functions run.

- `identity_model(shape)`: a one-node ONNX model, `values` -> `Identity` -> `observed`, whose output
  a calibrater can observe;
- `ort_range(values, method, ...)`: the range ORT's MinMax, Percentile or Entropy calibrater finds
  when that model is fed `values` (one array, or a list of arrays: one calibration batch each)
  through a `CalibrationDataReader`;
- `ort_scale_zero_point(low, high, symmetric)`: the INT8 scale and zero point ORT's quantizer derives
  from a range (`quant_utils.compute_scale_zp`);
- `ort_quantize_dequantize(values, scale, zero_point)`: `QuantizeLinear` then `DequantizeLinear`,
  run by an ONNX Runtime session;
- `tensor_activations(model_path, batches)`: every float tensor of an ONNX model on a list of
  batches, the data a calibrator sees.

Nothing here downloads anything; the graphs are built with `onnx.helper`.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import numpy as np

METHODS = ("minmax", "percentile", "entropy")
OPSET = 17


def _session(model):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def identity_model(shape):
    """A one-node ONNX model (opset 17): float32 input `values` of `shape` -> `Identity` -> output `observed`."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Identity", ["values"], ["observed"])], "calibrate_one_tensor",
        [helper.make_tensor_value_info("values", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("observed", TensorProto.FLOAT, list(shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model


def ort_range(values, method, symmetric=True, num_bins=2048, num_quantized_bins=128, percentile=99.999):
    """(low, high) that ONNX Runtime's calibrater for `method` computes for one tensor.

    `values` is one array (fed as one batch) or a list or tuple of arrays of one shape (fed one per
    `get_next` call) into `identity_model`; the range is the one the calibrater reports for the
    graph's output. `symmetric` goes to the MinMax and Percentile calibraters (the
    Entropy calibrater's search does not read it), `num_bins` to Percentile and Entropy,
    `num_quantized_bins` to Entropy, `percentile` to Percentile.
    """
    import onnx
    from onnxruntime.quantization import calibrate

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    batches = [np.ascontiguousarray(batch, dtype=np.float32)
               for batch in (values if isinstance(values, (list, tuple)) else [values])]
    if not batches or any(batch.shape != batches[0].shape for batch in batches):
        raise ValueError(f"expected one array or a list of arrays of one shape, got shapes "
                         f"{[batch.shape for batch in batches]}")
    with tempfile.TemporaryDirectory(prefix="calibrate_") as folder:
        model_path = Path(folder) / "identity.onnx"
        onnx.save(identity_model(batches[0].shape), model_path)
        common = {"augmented_model_path": str(Path(folder) / "augmented.onnx"), "symmetric": symmetric}
        if method == "minmax":
            calibrater = calibrate.MinMaxCalibrater(str(model_path), **common)
        elif method == "percentile":
            calibrater = calibrate.PercentileCalibrater(str(model_path), num_bins=num_bins, percentile=percentile,
                                                        **common)
        else:
            calibrater = calibrate.EntropyCalibrater(str(model_path), num_bins=num_bins,
                                                     num_quantized_bins=num_quantized_bins, **common)
        calibrater.augment_graph()
        calibrater.create_inference_session()
        with contextlib.redirect_stdout(io.StringIO()):  # the histogram calibraters print their progress
            calibrater.collect_data(_Batches([{"values": batch} for batch in batches]))
            result = calibrater.compute_data()
    low, high = result["observed"].range_value
    return float(np.asarray(low).ravel()[0]), float(np.asarray(high).ravel()[0])


class _Batches:
    """A CalibrationDataReader that yields the feed dicts in order, then None."""

    def __init__(self, feeds):
        self.pending = list(reversed(feeds))

    def get_next(self):
        return self.pending.pop() if self.pending else None


def ort_scale_zero_point(low, high, symmetric=True):
    """(scale, zero_point) of an INT8 tensor with range (low, high), as ONNX Runtime's quantizer computes
    them: `get_qmin_qmax_for_qType(INT8, symmetric=...)` then `compute_scale_zp`."""
    from onnx import TensorProto
    from onnxruntime.quantization import quant_utils

    qmin, qmax = quant_utils.get_qmin_qmax_for_qType(TensorProto.INT8, symmetric=symmetric)
    zero_point, scale = quant_utils.compute_scale_zp(np.array(low, np.float32), np.array(high, np.float32),
                                                     qmin, qmax, symmetric)
    return float(scale), int(zero_point)


def ort_quantize_dequantize(values, scale, zero_point):
    """`values` through ONNX's QuantizeLinear (to int8) and DequantizeLinear, run by ONNX Runtime."""
    from onnx import TensorProto, helper, numpy_helper

    array = np.ascontiguousarray(values, dtype=np.float32)
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero_point"], ["quantized"]),
         helper.make_node("DequantizeLinear", ["quantized", "scale", "zero_point"], ["restored"])],
        "quantize_dequantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(array.shape))],
        [helper.make_tensor_value_info("restored", TensorProto.FLOAT, list(array.shape))],
        initializer=[numpy_helper.from_array(np.array(scale, np.float32), "scale"),
                     numpy_helper.from_array(np.array(zero_point, np.int8), "zero_point")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return _session(model).run(["restored"], {"x": array})[0]


def tensor_activations(model_path, batches, input_name=None):
    """{tensor name: the values it took on all `batches`, concatenated along the batch axis} for every
    float32 tensor of the ONNX model that is not a weight (an initializer), after shape inference."""
    import onnx
    from onnx import TensorProto

    model = onnx.shape_inference.infer_shapes(onnx.load(str(model_path)))
    weights = {initializer.name for initializer in model.graph.initializer}
    known = {value.name for value in model.graph.output}
    for value in model.graph.value_info:
        if value.type.tensor_type.elem_type == TensorProto.FLOAT and value.name not in weights | known:
            model.graph.output.append(value)
            known.add(value.name)
    session = _session(model)
    name = input_name or session.get_inputs()[0].name
    names = [output.name for output in session.get_outputs()]
    runs = [session.run(names, {name: batch}) for batch in batches]
    collected = {name: np.concatenate([batch for batch in batches], axis=0)}
    for index, tensor in enumerate(names):
        collected[tensor] = np.concatenate([run[index] for run in runs], axis=0)
    return collected
