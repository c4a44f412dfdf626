from __future__ import annotations

import json
from pathlib import Path

import pytest

from ascend_tune.base.errors import ProfileError, SpecError
from ascend_tune.hardware import load_profile, profile_paths, sourced_leaves
from ascend_tune.spec import (
    OperatorSpec,
    ShapeSource,
    load_spec,
    load_spec_text,
    snake_case,
    spec_paths,
)
from ascend_tune.spec.checking import check_file
from ascend_tune.spec.schema_files import FOLDER, generated
from tests.conftest import DATA

BROKEN = {
    "bad_field_type.yaml": "broken/bad_field_type.yaml:51: tiling.fields.tileNum.type: "
    "'unsigned' is not one of: int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, "
    "uint64_t, float",
    "bad_identifier.yaml": "broken/bad_identifier.yaml:53: tiling.fields.class: field name "
    "'class' is not a valid C++ identifier",
    "duplicate_key.yaml": "broken/duplicate_key.yaml:46: duplicate key 'baseline.bufferNum'",
    "hostile_expression.yaml": "broken/hostile_expression.yaml:20: derive.tileNum: only plain "
    "function calls are allowed at '__import__('os').system('ls')' in expression "
    "'__import__('os').system('ls')'",
    "malformed_yaml.yaml": "broken/malformed_yaml.yaml:8: malformed YAML: expected ',' or '}', "
    "but got ':'",
    "missing_baseline_param.yaml": "broken/missing_baseline_param.yaml:42: baseline: baseline "
    "misses parameter(s): bufferNum",
    "not_a_spec.yaml": "broken/not_a_spec.yaml: neither an operator spec (has 'operator') nor a "
    "hardware profile (has 'chip' or 'base')",
    "unknown_key.yaml": "broken/unknown_key.yaml:22: constraint: unknown key 'constraint' "
    "(did you mean 'constraints'?); allowed: version, operator, description, core, dtypes, "
    "layouts, shape, attrs, params, derive, constraints, pipeline, baseline, tiling, "
    "kernel_constants, tiling_key, kernel, io, variants",
    "unknown_name.yaml": "broken/unknown_name.yaml:23: constraints.ub_fits: unknown name "
    "'tileLenght' (did you mean 'tileLength'?) at 'tileLenght' in expression "
    "'3 * bufferNum * tileLenght * sizeof.x <= hw.ub_bytes'",
    "wrong_pipe.yaml": "broken/wrong_pipe.yaml:39: pipeline.vector.body.0.body.2.pipe: pipe "
    "'cube' does not exist on the vector core; allowed: mte2, vector, mte3, scalar",
    "loop_unknown_key.yaml": "broken/loop_unknown_key.yaml:36: pipeline.vector.body.0.bufers: "
    "unknown key 'bufers' (did you mean 'buffers'?); allowed: loop, trips, buffers, body",
    "bad_profile_confidence.yaml": "broken/bad_profile_confidence.yaml:4: chip.clock_mhz."
    "confidence: 'sure' is not one of: high, med, low",
    "profile_unknown_key.yaml": "broken/profile_unknown_key.yaml:4: memory.ub_byte: unknown key "
    "'ub_byte' (did you mean 'ub_bytes'?); allowed: l1_bytes, l0a_bytes, l0b_bytes, l0c_bytes, "
    "ub_bytes, bt_bytes, fb_bytes, l2_bytes, hbm_bytes, hbm_bandwidth_gbps, l2_bandwidth_gbps, "
    "gm_align_bytes, gm_unaligned_efficiency, gm_contention_exponent, "
    "aic_gm_port_bytes_per_cycle, aiv_gm_port_bytes_per_cycle, nd2nz_row_cycles, "
    "copy_issue_cycles, nd2nz_max_pitch_elements, nd2nz_pitch_256b_efficiency, "
    "nd2nz_pitch_128b_efficiency, nd2nz_pitch_32b_efficiency, ub_block_bytes",
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_each_broken_file_gives_its_exact_message(name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    assert check_file(Path("broken") / name) == [BROKEN[name]]


def test_every_broken_file_is_covered() -> None:
    on_disk = {p.name for p in (DATA / "broken").glob("*.yaml")} - {"empty_domain.yaml"}
    assert on_disk == set(BROKEN)


@pytest.mark.parametrize("path", spec_paths() + profile_paths(), ids=lambda p: p.name)
def test_builtin_files_are_valid(path: Path) -> None:
    assert check_file(path) == []


def test_specs_compile_with_expected_structure() -> None:
    add = load_spec("add")
    assert add.name == "AddCustom" and add.snake_name == "add_custom"
    assert add.params == ("blockDim", "tileLength", "bufferNum")
    assert [s.core for s in add.sides] == ["vector"]
    mm = load_spec("matmul")
    for p in ("baseM", "baseN", "baseK", "stepM", "stepN", "stepKa", "stepKb", "dbL0A", "dbL0B",
              "dbL0C", "iterateOrder"):
        assert p in mm.params
    names = dict(mm.constraints)
    assert {"l0a_fits", "l0b_fits", "l0c_fits", "l1_fits", "basek_multiple_of_k0"} <= set(names)
    fields = {f.name for f in mm.tiling_nested[0].fields}
    assert {"usedCoreNum", "singleCoreM", "singleCoreN", "singleCoreK", "depthA1"} <= fields


def test_shape_from_is_parsed_at_load() -> None:
    mm = load_spec("matmul")
    assert mm.shape_from == {"M": ShapeSource(0, "dim", 0), "N": ShapeSource(1, "dim", 1),
                             "K": ShapeSource(0, "dim", 1)}
    assert str(mm.shape_from["N"]) == "input1.dim1"
    sm = load_spec("softmax")
    assert sm.shape_from == {"rows": ShapeSource(0, "rows"), "cols": ShapeSource(0, "last")}
    assert load_spec("add").shape_from == {"totalLength": ShapeSource(0, "size")}


@pytest.mark.parametrize(("source", "message"), [
    ("input0.dim9x", "'input0.dim9x' is not inputN.size, inputN.rows, inputN.last or inputN.dimD"),
    ("foo", "'foo' is not inputN.size, inputN.rows, inputN.last or inputN.dimD"),
    ("input0.dim100", "'input0.dim100' is not inputN.size, inputN.rows, inputN.last or "
                      "inputN.dimD"),
    ("input0.size ", "'input0.size ' is not inputN.size, inputN.rows, inputN.last or "
                     "inputN.dimD"),
    ("input2.size", "'input2.size' reads input 2, but io.inputs lists 2 (input0 to input1)"),
])
def test_bad_shape_from_is_a_load_error(source: str, message: str) -> None:
    path = spec_paths()[0].with_name("add.yaml")
    text = path.read_text().replace("from: input0.size", f"from: '{source}'")
    with pytest.raises(SpecError) as err:
        load_spec_text(text, "add.yaml")
    assert str(err.value) == f"add.yaml:9: shape.totalLength.from: {message}"


def test_shape_from_input_index_is_free_without_io() -> None:
    path = spec_paths()[0].with_name("add.yaml")
    text = path.read_text().replace("from: input0.size", "from: input7.size")
    head, _, tail = text.partition("\nio:\n")
    text = head + "\n" + tail[tail.index("\nvariants:"):]
    assert load_spec_text(text, "add.yaml").shape_from["totalLength"] == ShapeSource(7, "size")


def test_snake_case_matches_msopgen() -> None:
    assert snake_case("AddCustom") == "add_custom"
    assert snake_case("MatmulCustom") == "matmul_custom"
    assert snake_case("GatherV2Custom") == "gather_v2_custom"


def test_every_profile_number_has_source_and_confidence() -> None:
    for path in profile_paths():
        p = load_profile(str(path))
        leaves = sourced_leaves(p.data)
        assert len(leaves) > 40
        for key, _value, source, confidence in leaves:
            assert source.strip(), (path.name, key)
            assert confidence in ("high", "med", "low"), (path.name, key)


def test_profiles_inherit_and_override(tmp_path: Path) -> None:
    b3 = load_profile("ascend910b3")
    b1 = load_profile("ascend910b1")
    assert (b3["cube_cores"], b1["cube_cores"]) == (20, 24)
    assert b1["ub_bytes"] == b3["ub_bytes"] == 196608
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nbase: ascend910b3\nmemory:\n  hbm_bandwidth_gbps: "
                    "{value: 1200, source: my measurement, confidence: high}\n")
    custom = load_profile(str(mine))
    assert custom["hbm_bandwidth_gbps"] == 1200 and custom["clock_mhz"] == 1800
    assert custom.sha256 != b3.sha256


def test_shipped_json_schemas_match_the_loaders() -> None:
    for name, text in generated().items():
        regenerate = "regenerate: python -m ascend_tune.spec.schema_files"
        assert (FOLDER / name).read_text() == text, regenerate
    spec_schema = json.loads((FOLDER / "spec.schema.json").read_text())
    assert set(spec_schema["properties"]) == {
        "version", "layouts", "attrs",
        "operator", "description", "core", "dtypes", "shape", "params", "derive", "constraints",
        "pipeline", "baseline", "tiling", "kernel_constants", "tiling_key", "kernel", "io",
        "variants"}
    assert spec_schema["additionalProperties"] is False


def _grouped_text() -> str:
    return spec_paths()[0].with_name("grouped_matmul.yaml").read_text()


def test_layouts_resolve_per_operand_and_per_variant() -> None:
    def layouts(spec: OperatorSpec) -> dict[str, str | None]:
        (side,) = spec.sides
        (_walk, tile) = side.body
        k_l1 = tile.body[0]
        return {s.operand: s.layout for s in k_l1.body if getattr(s, "operand", None)}

    plain = load_spec("grouped_matmul")
    assert plain.layouts["a"] == plain.layouts["b"] == "row_major"
    assert layouts(plain) == {"a": "row_major", "b": "row_major"}
    assert layouts(load_spec("grouped_matmul:weight_nz")) == {"a": "row_major", "b": "nz"}
    text = _grouped_text().replace("\ndtypes:", "\nlayouts: {b: column_major}\ndtypes:", 1)
    assert layouts(load_spec_text(text, "g.yaml")) == {"a": "row_major", "b": "column_major"}


@pytest.mark.parametrize(("edit", "message"), [
    (("\ndtypes:", "\nlayouts: {bb: nz}\ndtypes:"),
     "g.yaml:14: layouts.bb: layout for unknown tensor 'bb' (did you mean 'b'?); tensors: a, b, "
     "c, acc, groups"),
    (("\ndtypes:", "\nlayouts: {b: zN}\ndtypes:"),
     "g.yaml:14: layouts.b: 'zN' is not one of: row_major, column_major, nz"),
    (("operand: b,", "operand: w,"),
     "g.yaml:77: pipeline.cube.body.1.body.0.body.1.operand: operand 'w' is not a tensor; "
     "tensors: a, b, c, acc, groups"),
    (("path: l1_to_l0a,", "path: l1_to_l0a, operand: a,"), None),
    (("rows: tileM, gm_rows: M, gm_cols: K,", "rows: tileM, gm_rows: M,"),
     "g.yaml:76: pipeline.cube.body.1.body.0.body.0.gm_rows: 'gm_rows' needs 'gm_cols' too: "
     "together they give the operand's row pitch in GM"),
    (("{stage: load_a_l0a, pipe: mte1, path: l1_to_l0a,",
      "{stage: load_a_l0a, pipe: mte1, path: l1_to_l0a, operand: a, gm_rows: M, gm_cols: K,"),
     "g.yaml:82: pipeline.cube.body.1.body.0.body.2.body.0.gm_rows: 'gm_rows' and 'gm_cols' "
     "apply to GM paths (gm_to_l1, gm_to_ub, l0c_to_gm, ub_to_gm), not l1_to_l0a"),
    (("operand: a, bytes: tileM", "bytes: tileM"),
     "g.yaml:76: pipeline.cube.body.1.body.0.body.0.gm_rows: 'gm_rows' and 'gm_cols' need "
     "'operand': the tensor's element size and layout turn them into the row pitch"),
])
def test_bad_layouts_are_load_errors(edit: tuple[str, str], message: str | None) -> None:
    text = _grouped_text().replace(*edit, 1)
    if message is None:  # an operand on an on-chip path is allowed (its layout is unused)
        load_spec_text(text, "g.yaml")
        return
    with pytest.raises(SpecError) as err:
        load_spec_text(text, "g.yaml")
    assert str(err.value) == message


def test_a_profile_written_before_the_issue_13_leaves_still_loads(tmp_path: Path) -> None:
    # A complete profile (no base) from before the contention / layout / floor leaves, as a
    # user file or a results file's embedded copy: it takes them from the reference profile.
    full = load_profile("ascend910b3")
    old = json.loads(json.dumps(full.data))
    del old["memory"]["gm_contention_exponent"], old["launch"]["cube_kernel_floor_us"]
    old["name"] = "old"
    path = tmp_path / "old.yaml"
    path.write_text(json.dumps(old))
    p = load_profile(str(path))
    assert p["gm_contention_exponent"] == full["gm_contention_exponent"]
    assert p["cube_kernel_floor_us"] == full["cube_kernel_floor_us"]
    assert "predates" in p.data["launch"]["cube_kernel_floor_us"]["note"]
    # Any other missing leaf is still an error.
    del old["memory"]["ub_bytes"]
    path.write_text(json.dumps(old))
    with pytest.raises(ProfileError, match="missing required key 'ub_bytes'"):
        load_profile(str(path))
