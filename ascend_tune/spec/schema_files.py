"""The JSON Schemas shipped for editors, generated from the loaders' own schema objects.

Regenerate with ``python -m ascend_tune.spec.schema_files``; a test fails if they drift.
"""

from __future__ import annotations

import json
from pathlib import Path

from ascend_tune.base.schema import to_json_schema
from ascend_tune.hardware import PROFILE_SCHEMA
from ascend_tune.spec import SPEC_SCHEMA

FOLDER = Path(__file__).resolve().parent / "schemas"


def generated() -> dict[str, str]:
    out = {}
    for name, node in (("spec.schema.json", SPEC_SCHEMA), ("profile.schema.json", PROFILE_SCHEMA)):
        doc = {"$schema": "https://json-schema.org/draft/2020-12/schema",
               "title": f"ascend-tune {name.split('.')[0]}", **to_json_schema(node)}
        out[name] = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    return out


if __name__ == "__main__":
    for name, text in generated().items():
        (FOLDER / name).write_text(text, encoding="utf-8")
        print(f"wrote {FOLDER / name}")
