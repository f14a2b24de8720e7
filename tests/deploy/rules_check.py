#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""deploy.rules: the Prometheus rules in deploy/prometheus/ are valid and every alert is tested.

1. `promtool check rules --lint-fatal` on every rules file under deploy/prometheus/ (its lint
   refuses two rules with the same name and labels: they would write the same ALERTS series);
2. `promtool test rules tests/deploy/rules_test.yaml` (the unit tests);
3. coverage: every alert rule has a unit test where it fires (an exp_alerts entry with its
   name and its labels: two rules sharing a name, each with its own `for`, are told apart by
   their labels) and every alert name one where it must not (empty exp_alerts), so a new
   alert cannot land untested;
4. runbooks: every alert has runbook_url = <base>/<alert name>.md and deploy/runbooks/<alert
   name>.md exists (and names the alert); every runbook there belongs to an alert;
5. no counter function (rate, irate, increase, resets) over a snapshot histogram: the buckets
   of skbnf_pool_inflight_age_seconds count the objects in flight now and go down as well as up
   (a gauge histogram), so rate() would read every fall as a counter reset. The dashboard's
   queries get the same check (dashboard_schema_test.py).
"""
import glob
import os
import re
import shutil
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUNBOOKS = os.path.join(ROOT, "deploy", "runbooks")
# The base the chart replaces with prometheusRule.runbookBaseUrl (templates/prometheusrule.yaml).
RUNBOOK_BASE = "https://github.com/skbnf/skbnf/blob/main/deploy/runbooks/"
# Histograms whose buckets are a snapshot (objects in flight now), not counters: never rated.
SNAPSHOT_HISTOGRAMS = ("skbnf_pool_inflight_age_seconds",)
_COUNTER_FUNCTION = re.compile(r"\b(rate|irate|increase|resets)\s*\(")


def rated_snapshot_histograms(expr):
    """The counter-function calls in `expr` whose argument names a snapshot histogram."""
    found = []
    for m in _COUNTER_FUNCTION.finditer(expr):
        depth, i = 1, m.end()
        while i < len(expr) and depth:
            depth += {"(": 1, ")": -1}.get(expr[i], 0)
            i += 1
        call = expr[m.start():i]
        if any(h in call for h in SNAPSHOT_HISTOGRAMS):
            found.append(call)
    return found


def check_rated_snapshot_histograms():
    """The check must be able to fail: planted violations are found, their fixes are not."""
    bad = ['rate(skbnf_pool_inflight_age_seconds_bucket{le="300"}[5m])',
           'histogram_quantile(0.9, sum by (le) (increase(\n  skbnf_pool_inflight_age_seconds_bucket{core=~"(1|2)"}[1h])))',
           'irate (skbnf_pool_inflight_age_seconds_count[1m])']
    good = ['sum by (le) (skbnf_pool_inflight_age_seconds_bucket)',
            'rate(skbnf_packet_latency_seconds_bucket[5m]) + skbnf_pool_inflight_age_seconds_count',
            'delta(instance:skbnf_pool_inflight_objects_older_than_300s:sum[10m])']
    return ([e for e in bad if not rated_snapshot_histograms(e)] +
            [e for e in good if rated_snapshot_histograms(e)])


def main():
    promtool = shutil.which("promtool")
    if not promtool:
        print("FAIL: promtool not found (Debian package prometheus; deploy/deps.sh installs it)")
        return 1
    rule_files = sorted(glob.glob(os.path.join(ROOT, "deploy/prometheus/*rules*.yaml")))
    if not rule_files:
        print("FAIL: no rules file under deploy/prometheus/")
        return 1
    rc = subprocess.call([promtool, "check", "rules", "--lint-fatal", *rule_files])
    if rc != 0:
        print("FAIL: promtool check rules")
        return 1
    test_file = os.path.join(HERE, "rules_test.yaml")
    rc = subprocess.call([promtool, "test", "rules", test_file])
    if rc != 0:
        print("FAIL: promtool test rules")
        return 1

    alerts, rules = [], []
    bad = 0
    wrong = check_rated_snapshot_histograms()
    if wrong:
        print(f"FAIL: the snapshot-histogram check misjudges {wrong}")
        return 1
    for f in rule_files:
        for g in yaml.safe_load(open(f))["groups"]:
            for r in g["rules"]:
                for call in rated_snapshot_histograms(r["expr"]):
                    print(f"FAIL: {r.get('alert') or r.get('record')}: {call}: a snapshot "
                          f"histogram's buckets go down as well as up; use them as gauges")
                    bad += 1
                if "alert" not in r:
                    continue
                alerts.append(r["alert"])
                rules.append(r)
                url = r.get("annotations", {}).get("runbook_url", "")
                want = RUNBOOK_BASE + r["alert"] + ".md"
                if url != want:
                    print(f"FAIL: alert {r['alert']}: runbook_url is {url!r}, want {want!r}")
                    bad += 1
                page = os.path.join(RUNBOOKS, r["alert"] + ".md")
                if not os.path.isfile(page):
                    print(f"FAIL: alert {r['alert']}: no runbook {os.path.relpath(page, ROOT)}")
                    bad += 1
                elif r["alert"] not in open(page).read().split("\n", 1)[0]:
                    print(f"FAIL: {os.path.relpath(page, ROOT)} does not start with the alert's name")
                    bad += 1
    for page in sorted(glob.glob(os.path.join(RUNBOOKS, "Skbnf*.md"))):
        if os.path.basename(page)[:-3] not in alerts:
            print(f"FAIL: runbook {os.path.relpath(page, ROOT)} has no alert")
            bad += 1
    tests = yaml.safe_load(open(test_file))
    tested_rules = [os.path.normpath(os.path.join(HERE, f)) for f in tests["rule_files"]]
    missing_files = set(rule_files) - set(tested_rules)
    if missing_files:
        print(f"FAIL: rules_test.yaml does not load {sorted(missing_files)}")
        return 1
    if not alerts:
        print(f"FAIL: no alert in {rule_files}: the checks below would check nothing")
        return 1
    fired, quiet = [], set()  # fired: (alert name, labels) of every expected alert
    for t in tests["tests"]:
        for a in t.get("alert_rule_test", []):
            if not a.get("exp_alerts"):
                quiet.add(a["alertname"])
            for e in a.get("exp_alerts") or []:
                labels = {k: str(v) for k, v in (e.get("exp_labels") or {}).items()}
                fired.append((a["alertname"], labels))
    for r in rules:
        want = {k: str(v) for k, v in (r.get("labels") or {}).items()}
        if not any(name == r["alert"] and want.items() <= got.items() for name, got in fired):
            print(f"FAIL: alert {r['alert']} {want} has no unit test where it fires")
            bad += 1
    for a in dict.fromkeys(alerts):
        if a not in quiet:
            print(f"FAIL: alert {a} has no unit test where it must stay quiet")
            bad += 1
    fires = {name for name, _ in fired}
    unknown = (fires | quiet) - set(alerts)
    for a in sorted(unknown):
        print(f"FAIL: rules_test.yaml tests unknown alert {a}")
        bad += 1
    if bad:
        return 1
    names = list(dict.fromkeys(alerts))
    print(f"OK: {len(names)} alerts ({len(rules)} rules), each rule tested firing and each "
          f"alert quiet: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
