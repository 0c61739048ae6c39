"""validate.py loads a YAML --benchmark-report as llm-d-benchmark does, with
PyYAML's safe_load (YAML 1.1), validates it against the format's JSON Schema
with Python's jsonschema (draft 2020-12), and prints the document it read as
JSON (floats in Python's shortest repr, which reads back as the same double).

    python3 validate.py SCHEMA.json REPORT.yaml

Exit status: 0 valid (the document on stdout), 1 invalid (the errors on
stderr), 3 PyYAML or jsonschema is not installed.
"""

import json
import sys

try:
    import jsonschema
    import yaml
except ImportError as e:  # the test skips, or fails in CI
    print("missing: %s" % e, file=sys.stderr)
    sys.exit(3)


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    with open(sys.argv[2]) as f:
        doc = yaml.safe_load(f)
    cls = jsonschema.Draft202012Validator
    checker = getattr(cls, "FORMAT_CHECKER", None) or jsonschema.FormatChecker()
    errors = sorted(cls(schema, format_checker=checker).iter_errors(doc), key=lambda e: list(e.path))
    for e in errors:
        print("%s: %s" % ("/".join(str(p) for p in e.path), e.message), file=sys.stderr)
    if errors:
        sys.exit(1)
    # A value JSON has no text for (a date PyYAML read from an unquoted
    # timestamp, a NaN) is an error too: the report holds none.
    json.dump(doc, sys.stdout, allow_nan=False)


main()
