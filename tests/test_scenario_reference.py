"""The scenario reference the package ships is the model's: `shortflow scenario keys` and
`schema` print what crates/scenario generates, the JSON Schema in the package is that one,
docs/scenario.md carries the same key table, and every shipped scenario is valid against
the schema (an editor using it would accept them)."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from shortflow.cli import app
from shortflow.scenario import builtin_names

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def test_keys_list_type_unit_default_range_and_help():
    keys = {k["key"]: k for k in json.loads(_cli("scenario", "keys", "--json", "-"))}
    rtt = keys["path.rtt"]
    assert (rtt["kind"], rtt["unit"]) == ("string", "duration")
    assert rtt["range"].startswith("0s to 60s") and "propagation" in rtt["help"]
    assert keys["workload.response"]["default"] == "13549B"
    assert keys["{side}.rto_min"]["default"] == "the stack profile's"
    assert keys["{side}.stack"]["default"] == "linux"
    assert all(k["help"] for k in keys.values()), [k for k, v in keys.items() if not v["help"]]


def test_shipped_schema_and_docs_are_what_the_model_generates():
    shipped = (resources.files("shortflow") / "data" / "scenario.schema.json").read_text()
    assert _cli("scenario", "schema") == shipped
    assert _cli("scenario", "keys", "--markdown") in (ROOT / "docs" / "scenario.md").read_text()


def test_schema_written_to_a_file(tmp_path):
    out = tmp_path / "s.json"
    _cli("scenario", "schema", "-o", str(out))
    assert json.loads(out.read_text())["title"] == "shortflow scenario file"


@pytest.mark.parametrize("name", builtin_names())
def test_every_shipped_scenario_is_valid_against_the_schema(name):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extras (make build)")
    schema = json.loads((resources.files("shortflow") / "data" / "scenario.schema.json").read_text())
    doc = tomllib.loads((resources.files("shortflow") / "scenarios" / f"{name}.toml").read_text())
    jsonschema.validate(doc, schema)


def test_the_schema_refuses_what_the_model_refuses():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extras (make build)")
    schema = json.loads((resources.files("shortflow") / "data" / "scenario.schema.json").read_text())
    for bad in ({"path": {"rtt": "20ms", "bandwith": "1Mbit"}}, {"path": {"rtt": 20}}, {"colour": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
