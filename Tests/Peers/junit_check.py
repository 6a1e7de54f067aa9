"""Reads a JUnit XML file with junitparser (a third-party reader, as CI tools read these) and prints, as JSON, the
document's totals and every suite with its attributes and cases: name, classname, result (passed, failure, skipped,
error), the result's message, type and text, and the case's system-out."""
import json
import sys

from junitparser import JUnitXml, TestSuite

xml = JUnitXml.fromfile(sys.argv[1])
suites = [xml] if isinstance(xml, TestSuite) else list(xml)
document = {
    "name": xml.name, "tests": xml.tests, "failures": xml.failures, "errors": xml.errors, "time": xml.time,
    "suites": [],
}
for suite in suites:
    cases = []
    for case in suite:
        results = [{"kind": type(result).__name__.lower(), "message": result.message, "type": result.type,
                    "text": result.text} for result in case.result]
        cases.append({"name": case.name, "classname": case.classname,
                      "result": results[0]["kind"] if results else "passed",
                      "results": results, "systemOut": case.system_out})
    document["suites"].append({
        "name": suite.name, "tests": suite.tests, "failures": suite.failures, "errors": suite.errors,
        "skipped": suite.skipped, "time": suite.time, "timestamp": suite.timestamp, "cases": cases,
    })
print(json.dumps(document))
