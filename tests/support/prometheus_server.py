# SPDX-License-Identifier: BSD-3-Clause
"""Debian's real `prometheus` for a test: started on a free loopback port with the test's own
configuration, TSDB and log in a directory of the test's, stopped with SIGTERM (SIGKILL after
30 s). Used by tests/control/prometheus_test.py, tests/control/metrics_tls_test.py and
tests/deploy/dashboard_test.py; each queries it through Prometheus' HTTP API (`api`) its own way.
"""
import os
import shutil
import signal
import socket
import subprocess

PROMETHEUS = os.environ.get("PROMETHEUS") or shutil.which("prometheus") or "/usr/bin/prometheus"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusServer:
    """`config_text`: prometheus.yml's text. The port is free when chosen; a collision makes
    Prometheus exit, which `alive()` and `log_text()` report."""

    def __init__(self, directory, config_text):
        self.config = os.path.join(directory, "prometheus.yml")
        with open(self.config, "w") as f:
            f.write(config_text)
        self.log_path = os.path.join(directory, "prometheus.log")
        self._log = open(self.log_path, "w+")
        self.port = _free_port()
        self.proc = subprocess.Popen(
            [PROMETHEUS, "--config.file=" + self.config,
             "--storage.tsdb.path=" + os.path.join(directory, "data"),
             "--web.listen-address=127.0.0.1:%d" % self.port, "--log.level=warn"],
            stdout=self._log, stderr=self._log)
        self.api = "http://127.0.0.1:%d" % self.port

    def alive(self):
        return self.proc.poll() is None

    def log_text(self):
        self._log.flush()
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
