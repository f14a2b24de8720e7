#!/usr/bin/python3
"""deploy.rules: the Prometheus rules in deploy/prometheus/ are valid and every alert is tested.

1. `promtool check rules` on every rules file under deploy/prometheus/;
2. `promtool test rules tests/deploy/rules_test.yaml` (the unit tests);
3. coverage: every alert in the rules has a unit test where it fires (non-empty exp_alerts)
   and one where it must not (empty exp_alerts), so a new alert cannot land untested.
"""
import glob
import os
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main():
    promtool = shutil.which("promtool")
    if not promtool:
        print("FAIL: promtool not found (Debian package prometheus; deploy/deps.sh installs it)")
        return 1
    rule_files = sorted(glob.glob(os.path.join(ROOT, "deploy/prometheus/*rules*.yaml")))
    if not rule_files:
        print("FAIL: no rules file under deploy/prometheus/")
        return 1
    rc = subprocess.call([promtool, "check", "rules", *rule_files])
    if rc != 0:
        print("FAIL: promtool check rules")
        return 1
    test_file = os.path.join(HERE, "rules_test.yaml")
    rc = subprocess.call([promtool, "test", "rules", test_file])
    if rc != 0:
        print("FAIL: promtool test rules")
        return 1

    alerts = []
    for f in rule_files:
        for g in yaml.safe_load(open(f))["groups"]:
            alerts += [r["alert"] for r in g["rules"] if "alert" in r]
    tests = yaml.safe_load(open(test_file))
    tested_rules = [os.path.normpath(os.path.join(HERE, f)) for f in tests["rule_files"]]
    missing_files = set(rule_files) - set(tested_rules)
    if missing_files:
        print(f"FAIL: rules_test.yaml does not load {sorted(missing_files)}")
        return 1
    fires, quiet = set(), set()
    for t in tests["tests"]:
        for a in t.get("alert_rule_test", []):
            (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
    bad = 0
    for a in alerts:
        if a not in fires:
            print(f"FAIL: alert {a} has no unit test where it fires")
            bad += 1
        if a not in quiet:
            print(f"FAIL: alert {a} has no unit test where it must stay quiet")
            bad += 1
    unknown = (fires | quiet) - set(alerts)
    for a in sorted(unknown):
        print(f"FAIL: rules_test.yaml tests unknown alert {a}")
        bad += 1
    if bad:
        return 1
    print(f"OK: {len(alerts)} alerts, each tested firing and quiet: {', '.join(alerts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
