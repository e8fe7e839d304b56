#!/usr/bin/env python3
"""Prints why each skipped test was skipped, from CTest's JUnit report (ctest --output-junit).

CTest lists a skipped test (exit 77, SKIP_RETURN_CODE) by name only and shows no output for it, even
with --output-on-failure; the tests print their reason as their last line of output. Used by
scripts/test.sh and scripts/sanitize.sh after each CTest run.

Usage: skip-reasons.py JUNIT_XML
"""
import sys
import xml.etree.ElementTree as ElementTree


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        suite = ElementTree.parse(sys.argv[1]).getroot()
    except (OSError, ElementTree.ParseError) as error:
        print(f"skip-reasons: cannot read {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    for case in suite.iter("testcase"):
        if case.find("skipped") is None:
            continue
        output = (case.findtext("system-out") or "").strip().splitlines()
        reason = output[-1].strip() if output else "(no output)"
        print(f"skipped: {case.get('name')}: {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
