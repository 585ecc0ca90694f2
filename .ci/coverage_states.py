#!/usr/bin/env python3
"""Prints a run's coverage statement from its JSON report and checks what it left unchecked.

    coverage_states.py REPORT.json [--column BACKEND] [--rules-not-checked ID=STATE,...]
                       [--state ID=STATE ...]

REPORT.json is a `conformance --json` report, or with --column a `matrix` report's column.
--rules-not-checked: exactly these rules are not checked, each in this state (docs/guide/
conformance.md, "What a run covered"); --state: this assertion is in this state. Exit status 1,
naming the difference, when a check fails.
"""

import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("--column")
    parser.add_argument("--rules-not-checked")
    parser.add_argument("--state", action="append", default=[])
    args = parser.parse_args()
    with open(args.report, encoding="utf-8") as f:
        report = json.load(f)
    if args.column is None:
        coverage = report["coverage"]
        name = report["summary"]["backend"]
    else:
        columns = [c for c in report["columns"] if c["backend"] == args.column]
        if not columns or not columns[0].get("coverage"):
            sys.exit(f"{args.report}: no column {args.column} with a coverage statement")
        coverage = columns[0]["coverage"]
        name = args.column
    print(f"{name}: {coverage['line']}")
    states = {a["id"]: a["state"] for a in coverage["assertions"]}
    failed = []
    if args.rules_not_checked is not None:
        want = dict(pair.split("=", 1) for pair in args.rules_not_checked.split(",") if pair)
        got = {a["id"]: a["state"] for a in coverage["assertions"]
               if a["kind"] == "rule" and a["state"] != "checked"}
        if got != want:
            failed.append(f"rules not checked: {got}, expected {want}")
    for pair in args.state:
        assertion, state = pair.split("=", 1)
        if states.get(assertion) != state:
            failed.append(f"{assertion} is {states.get(assertion)!r}, expected {state!r}")
    for failure in failed:
        print(f"{name}: coverage: {failure}", file=sys.stderr)
    sys.exit(1 if failed else 0)


main()
