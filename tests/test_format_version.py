"""The ``version`` key of spec and profile files, and what their hashes cover."""

from __future__ import annotations

import pytest
import yaml

from ascend_tune.base.errors import AscendTuneError
from ascend_tune.hardware import load_profile_data
from ascend_tune.spec import load_spec_text
from tests.conftest import ROOT

SPEC_TEXT = (ROOT / "operator_specs" / "add.yaml").read_text()
PROFILE = yaml.safe_load((ROOT / "hw_profiles" / "ascend910b3.yaml").read_text())


def test_spec_version_1_is_the_same_spec_and_a_newer_version_is_refused() -> None:
    plain = load_spec_text(SPEC_TEXT, "add.yaml")
    versioned = load_spec_text("version: 1\n" + SPEC_TEXT, "add.yaml")
    assert versioned.sha256 == plain.sha256
    with pytest.raises(AscendTuneError, match=r"add.yaml:1: version: '2' is not one of: 1"):
        load_spec_text("version: 2\n" + SPEC_TEXT, "add.yaml")


def test_profile_version_and_provenance_leave_the_hash_alone_values_do_not() -> None:
    base = load_profile_data(PROFILE, "p.yaml")
    documented = {**PROFILE, "version": 1, "description": "another description"}
    documented["memory"] = {k: {**v, "note": "checked again"} if isinstance(v, dict) else v
                            for k, v in PROFILE["memory"].items()}
    assert load_profile_data(documented, "p.yaml").sha256 == base.sha256
    changed = {**PROFILE, "memory": {**PROFILE["memory"], "hbm_bandwidth_gbps": {
        **PROFILE["memory"]["hbm_bandwidth_gbps"],
        "value": PROFILE["memory"]["hbm_bandwidth_gbps"]["value"] * 2}}}
    assert load_profile_data(changed, "p.yaml").sha256 != base.sha256
    with pytest.raises(AscendTuneError, match="version: '3' is not one of: 1"):
        load_profile_data({**PROFILE, "version": 3}, "p.yaml")
