# SPDX-License-Identifier: BSD-3-Clause
"""The deployed SkbnfBuffersLeaking rules for a test in seconds, not minutes.

scaled_rules(rules, out) writes to `out` the SkbnfBuffersLeaking alerts of the rule file `rules`
(deploy/prometheus/skbnf-rules.yaml) and the instance:skbnf_pool_* recording rules they read,
with every time divided by 30 (300 s -> 10 s, a bucket bound of the age histogram; 10m -> 20s;
5m -> 10s; 15m -> 30s), in one group evaluated every second: the expressions are the deployed
ones; start_prometheus runs a real Prometheus on them, alerts() reads the alert's states.
Used by tests/integration/leak_vhost_test.py and leak_plugin_test.py.
"""
import json
import os
import re
import urllib.parse
import urllib.request

import yaml
from prometheus_server import PrometheusServer

FACTOR = 30
OLD = 300 // FACTOR  # seconds: the rules' "old" (300 s), scaled


def scaled(duration):
    """A Prometheus duration of the deployed rules divided by 30 ('10m' -> '20s')."""
    n, unit = int(duration[:-1]), duration[-1]
    s = n * {"s": 1, "m": 60, "h": 3600}[unit]
    return "%ds" % (s // FACTOR)


def scaled_rules(rules, out):
    """Writes the scaled rules to `out`; ValueError if `rules` has no SkbnfBuffersLeaking."""
    with open(rules) as f:
        doc = yaml.safe_load(f)
    keep = []
    for g in doc["groups"]:
        for r in g["rules"]:
            if r.get("alert") == "SkbnfBuffersLeaking" or r.get("record", "").startswith(
                    "instance:skbnf_pool_"):
                keep.append(r)
    if not any(r.get("alert") == "SkbnfBuffersLeaking" for r in keep):
        raise ValueError("no SkbnfBuffersLeaking in " + rules)
    scaled_out = []
    for r in keep:
        text = json.dumps(dict(r))
        text = text.replace('300|300.0', '%d|%d.0' % (OLD, OLD))
        text = re.sub(r'\[(\d+[smh])\]', lambda m: "[" + scaled(m.group(1)) + "]", text)
        text = re.sub(r'offset (\d+[smh])', lambda m: "offset " + scaled(m.group(1)), text)
        r = json.loads(text)
        if "for" in r:
            r["for"] = scaled(r["for"])
        scaled_out.append(r)
    with open(out, "w") as f:
        yaml.safe_dump({"groups": [{"name": "leak-test", "interval": "1s", "rules": scaled_out}]},
                       f)


def start_prometheus(directory, rules_file, job, target_port):
    """Debian's Prometheus (tests/support/prometheus_server.py) scraping 127.0.0.1:target_port
    every second with `rules_file`'s SkbnfBuffersLeaking rules scaled (scaled_rules)."""
    rules = os.path.join(directory, "rules.yaml")
    scaled_rules(rules_file, rules)
    return PrometheusServer(directory, (
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "rule_files: [%s]\nscrape_configs:\n  - job_name: %s\n    static_configs:\n"
        "      - targets: ['127.0.0.1:%d']\n") % (rules, job, target_port))


def query(prom, expr):
    """An instant query's result list; None while Prometheus does not answer."""
    q = urllib.parse.urlencode({"query": expr})
    try:
        with urllib.request.urlopen(prom.api + "/api/v1/query?" + q, timeout=10) as r:
            return json.load(r)["data"]["result"]
    except OSError:
        return None


def alerts(prom):
    """The states of SkbnfBuffersLeaking's alerts now; None while Prometheus does not answer."""
    res = query(prom, 'ALERTS{alertname="SkbnfBuffersLeaking"}')
    return None if res is None else {x["metric"].get("alertstate") for x in res}
