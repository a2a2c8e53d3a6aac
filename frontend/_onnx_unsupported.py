"""Why an ONNX op is not supported: the reason `check_support` (and `mini-import-onnx --check`)
gives for an op without an emitter, and `mini-import-onnx --ops`, the coverage of every ONNX op.

Ops are not supported for one of these reasons; any other op simply has no importer yet.
"""

from __future__ import annotations

CATEGORIES: dict[str, tuple[str, frozenset[str]]] = {
    "training": ("training-only op (optimizer / gradient; minimlir compiles inference)", frozenset({
        "Adagrad", "Adam", "Momentum", "Gradient"})),
    "sequence": ("sequence / optional values (minimlir's graph dialect has tensors only)", frozenset({
        "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert",
        "SequenceLength", "SequenceMap", "SplitToSequence", "ConcatFromSequence", "Optional",
        "OptionalGetElement", "OptionalHasElement"})),
    "string": ("string tensors (no string element type)", frozenset({
        "StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "TfIdfVectorizer"})),
    "decode": ("decodes encoded bytes (image files)", frozenset({"ImageDecoder"})),
    "signal": ("signal processing with complex values (not implemented yet)", frozenset({
        "DFT", "STFT"})),
    "sampling": ("data-dependent sampling / scattering of image regions (not implemented yet)", frozenset({
        "MaxRoiPool"})),
}

_BY_OP = {op: text for text, ops in CATEGORIES.values() for op in ops}

DOMAINS = {
    "ai.onnx.preview.training": "training-only ops (ai.onnx.preview.training)",
}

ML_OPS: dict[str, str] = {
    "LabelEncoder": "string tensors (no string element type)",
    "CategoryMapper": "string tensors (no string element type)",
    "CastMap": "map values (minimlir's graph dialect has tensors only)",
    "DictVectorizer": "map values (minimlir's graph dialect has tensors only)",
    "ZipMap": "sequence-of-map output (minimlir's graph dialect has tensors only)",
}
"""Why an ai.onnx.ml op is refused; the ones imported are registered with `onnx_op(...,
domain="ai.onnx.ml")` (frontend/_onnx_ops_ml.py), any other has no importer yet."""


def no_importer_reason(op_type: str) -> str:
    """The reason for an ai.onnx op without an emitter (and no importable function body)."""
    why = _BY_OP.get(op_type)
    return "no importer for this op" if why is None else f"no importer for this op: {why}"


def domain_reason(domain: str, op_type: str = "") -> str:
    """The reason for an op of a domain other than ai.onnx that has no emitter."""
    if domain == "ai.onnx.ml":
        why = ML_OPS.get(op_type)
        return f"ai.onnx.ml op {op_type}: " + (why if why else "no importer for this op yet")
    why = DOMAINS.get(domain)
    return f"domain '{domain}' is not supported" + (f": {why}" if why else "")


def op_coverage() -> list[tuple[str, int, str, str]]:
    """(op, latest opset, status, detail) for every ai.onnx op of the installed onnx package:
    status "emitter" (imported by an emitter), "function" (no emitter: imported as its ONNX
    function body, when the ops of that body import), or "no" with the reason."""
    import onnx

    from minimlir.frontend._onnx_ops import OP_TABLE

    latest: dict[str, object] = {}
    for s in onnx.defs.get_all_schemas_with_history():
        if s.domain in ("", "ai.onnx") and (s.name not in latest or s.since_version > latest[s.name].since_version):
            latest[s.name] = s
    rows = []
    for name in sorted(latest):
        s = latest[name]
        if name in OP_TABLE:
            rows.append((name, s.since_version, "emitter", ""))
        elif name in _BY_OP:
            rows.append((name, s.since_version, "no", _BY_OP[name]))
        elif list(s.function_opset_versions) or list(s.context_dependent_function_opset_versions):
            rows.append((name, s.since_version, "function",
                         "imported as its ONNX function body (when every op of the body imports)"))
        else:
            rows.append((name, s.since_version, "no", "no importer yet"))
    return rows
