"""The published schemas the JUnit and SARIF reports must satisfy (tests/data/reports/).

Each validator returns the schema's complaints (empty when the document is valid), so a test
can assert both that a report is valid and that a broken one is not.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import xmlschema

__all__ = ["JUNIT_XSD", "SARIF_SCHEMA", "junit_errors", "sarif_errors"]

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "reports"
JUNIT_XSD = DATA / "junit-9.xsd"
SARIF_SCHEMA = DATA / "sarif-schema-2.1.0.json"


@cache
def _junit() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(JUNIT_XSD))


@cache
def _sarif() -> jsonschema.Draft4Validator:
    schema = json.loads(SARIF_SCHEMA.read_text("utf-8"))
    return jsonschema.Draft4Validator(schema)


def junit_errors(xml: bytes) -> list[str]:
    """The XSD's complaints about a JUnit XML document (parse errors included)."""
    try:
        return [str(e.reason or e) for e in _junit().iter_errors(xml.decode("utf-8"))]
    except xmlschema.XMLSchemaException as exc:
        return [str(exc)]
    except Exception as exc:  # an XML parse error comes from the parser, not the schema
        return [f"not XML: {exc}"]


def sarif_errors(document: Any) -> list[str]:
    """The SARIF 2.1.0 schema's complaints about a SARIF log."""
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in _sarif().iter_errors(document)
    ]
