"""Reports other tools read (JUnit XML, SARIF 2.1.0), built from the verdict the launcher wrote.

A candidate's code and ``conftest.py`` load beside pytest's own
writers (``--junitxml``) and can rewrite what they produce. These reports are composed by the
launcher process from the verdict it computed and the history it already trusts, so a reader
of the JUnit file or the code-scanning alerts sees exactly what the verdict says.
"""

from __future__ import annotations

from pytest_loopcontract.verifier.reports.junit import junit_xml
from pytest_loopcontract.verifier.reports.locate import TestPlace, test_place
from pytest_loopcontract.verifier.reports.sarif import Evidence, sarif_log

__all__ = ["Evidence", "TestPlace", "junit_xml", "sarif_log", "test_place"]
