# SPDX-License-Identifier: BSD-3-Clause
"""/metrics over HTTPS (--metrics-tls-cert, --metrics-tls-key, --metrics-tls-client-ca;
server/control/metrics_tls.h), scraped by Debian's real `prometheus` with certificates the real
`openssl` makes.

Prometheus' side is its scrape config's `scheme: https` and `tls_config` block, as documented at
https://prometheus.io/docs/prometheus/latest/configuration/configuration/#tls_config:
`ca_file` (the CA that verifies the target's certificate), `cert_file`/`key_file` (the client
certificate for mTLS), `server_name` (the name checked; here the certificate's IP SAN, so unset).
A target that passes is `up` 1 and its series are queried through the HTTP API (/api/v1/query).

Also: plaintext HTTP to the TLS port gets no metrics; with --metrics-tls-client-ca a client
without a certificate, or with one from another CA, is refused; a rotated certificate is served
without a restart; bad flag combinations and unreadable files stop start-up naming the flag."""

import os
import shutil
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402
import prometheus_test as p  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from prometheus_server import PrometheusServer  # noqa: E402

OPENSSL = shutil.which("openssl") or "/usr/bin/openssl"


def openssl(*args):
    subprocess.run([OPENSSL] + list(args), check=True, capture_output=True)


class Pki:
    """A server CA with a server certificate for 127.0.0.1, and a client CA with a client
    certificate; a stranger CA's client certificate (must be refused)."""

    def __init__(self, d):
        self.d = d
        for ca in ("ca", "client-ca", "stranger-ca"):
            openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", self.path(ca + ".key"), "-out", self.path(ca + ".crt"),
                    "-subj", "/CN=" + ca, "-days", "2")
        self.issue("server", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost")
        self.issue("client", "client-ca", "subjectAltName=DNS:prometheus")
        self.issue("stranger", "stranger-ca", "subjectAltName=DNS:prometheus")

    def path(self, name):
        return os.path.join(self.d, name)

    def issue(self, name, ca, san, out=None):
        ext = self.path(name + ".ext")
        with open(ext, "w") as f:
            f.write(san + "\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", self.path((out or name) + ".key"), "-out", self.path(name + ".csr"),
                "-subj", "/CN=" + name)
        openssl("x509", "-req", "-in", self.path(name + ".csr"), "-CA", self.path(ca + ".crt"),
                "-CAkey", self.path(ca + ".key"), "-CAcreateserial", "-days", "2",
                "-out", self.path((out or name) + ".crt"), "-extfile", ext)


def tls_get(port, cafile, cert=None, key=None, request=b"GET /metrics HTTP/1.1"):
    """GET /metrics over TLS with Python's ssl (OpenSSL): (served certificate DER, response)."""
    ctx = ssl.create_default_context(cafile=cafile)
    if cert:
        ctx.load_cert_chain(cert, key)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            t.sendall(request + b"\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                chunk = t.recv(65536)
                if not chunk:
                    break
                data += chunk
            return t.getpeercert(binary_form=True), data.decode()


def plaintext_get(port):
    """GET /metrics in plaintext HTTP; whatever comes back before the server closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except ConnectionResetError:
            pass
        return data


class Prometheus(PrometheusServer):
    """Debian's prometheus scraping 127.0.0.1:port over https with `tls` as its tls_config."""

    def __init__(self, d, port, tls):
        super().__init__(d, "global:\n  scrape_interval: 1s\n"
                            "scrape_configs:\n"
                            "  - job_name: skbnf\n"
                            "    scheme: https\n"
                            "    tls_config:\n" +
                         "".join("      %s: %s\n" % kv for kv in sorted(tls.items())) +
                         "    static_configs:\n"
                         "      - targets: ['127.0.0.1:%d']\n" % port)

    def query(self, expr):
        if not self.alive():
            raise AssertionError("prometheus exited: " + self.log_text())
        try:
            r = p.get_json(self.api + "/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
        except OSError:
            return []  # not listening yet
        return r["data"]["result"] if r.get("status") == "success" else []

    def targets(self):
        try:
            return p.get_json(self.api + "/api/v1/targets")["data"]["activeTargets"]
        except OSError:
            return []


class MetricsTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="skbnf-metrics-tls-")
        cls.pki = Pki(cls.dir)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def daemon(self, *extra):
        k = self.pki.path
        d = h.Daemon("--metrics-tls-cert=" + k("server.crt"), "--metrics-tls-key=" + k("server.key"),
                     "--tls-reload-interval=1", *extra)
        self.addCleanup(lambda: self.assertEqual(d.stop(), 0))
        return d

    def prometheus(self, port, tls):
        d = tempfile.mkdtemp(dir=self.dir)
        prom = Prometheus(d, port, tls)
        self.addCleanup(prom.stop)
        return prom

    def scraped(self, prom):
        """Waits for the target up and a skbnf_ series queried through Prometheus' API."""
        h.until(lambda: [r for r in prom.query('up{job="skbnf"}') if r["value"][1] == "1"],
                "prometheus sees the https target up: %r" % prom.targets(), timeout=60)
        info = h.until(lambda: prom.query('skbnf_strategy_info{job="skbnf"}'),
                       "skbnf_strategy_info through prometheus' HTTP API", timeout=30)
        self.assertIn("spec", info[0]["metric"])

    def test_prometheus_scrapes_https_and_plaintext_gets_nothing(self):
        d = self.daemon()
        _, body = tls_get(d.metrics_port, self.pki.path("ca.crt"))
        self.assertIn("HTTP/1.1 200 OK", body)
        self.assertIn("skbnf_strategy_info", body)
        self.assertIn("Content-Type: text/plain; version=0.0.4", body)
        ca = self.pki.path("ca.crt")
        head = tls_get(d.metrics_port, ca, request=b"HEAD /metrics HTTP/1.1")[1]
        self.assertTrue(head.startswith("HTTP/1.1 200 OK"), head)
        self.assertNotIn("skbnf_", head)  # headers only
        self.assertTrue(tls_get(d.metrics_port, ca, request=b"GET / HTTP/1.1")[1].startswith(
            "HTTP/1.1 404 Not Found"))
        self.assertTrue(tls_get(d.metrics_port, ca, request=b"POST /metrics HTTP/1.1")[1]
                        .startswith("HTTP/1.1 405 Method Not Allowed"))
        self.assertNotIn(b"skbnf_", plaintext_get(d.metrics_port))
        # scrapers that hang up (RST) right after asking: the server's writes fail, it lives on
        for _ in range(20):
            ctx = ssl.create_default_context(cafile=ca)
            t = ctx.wrap_socket(socket.create_connection(("127.0.0.1", d.metrics_port),
                                                         timeout=10),
                                server_hostname="127.0.0.1")
            t.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            t.close()
        self.assertIsNone(d.proc.poll(), d.read_stderr())
        self.assertIn("skbnf_strategy_info", tls_get(d.metrics_port, ca)[1])
        prom = self.prometheus(d.metrics_port, {"ca_file": self.pki.path("ca.crt")})
        self.scraped(prom)
        self.assertNotIn(b"skbnf_", plaintext_get(d.metrics_port))  # still, after scrapes
        # the served certificate's notAfter, for the expiry alerts (deploy/prometheus rules)
        (expiry,) = prom.query('skbnf_tls_certificate_expiry_timestamp_seconds'
                               '{certificate="metrics"}')
        end = subprocess.run([OPENSSL, "x509", "-noout", "-enddate", "-in",
                              self.pki.path("server.crt")], capture_output=True, text=True,
                             check=True).stdout.strip().split("=", 1)[1]
        self.assertEqual(float(expiry["value"][1]), ssl.cert_time_to_seconds(end))

    def test_mtls_prometheus_with_a_client_certificate_and_no_one_else(self):
        k = self.pki.path
        d = self.daemon("--metrics-tls-client-ca=" + k("client-ca.crt"))
        _, body = tls_get(d.metrics_port, k("ca.crt"), k("client.crt"), k("client.key"))
        self.assertIn("skbnf_strategy_info", body)
        for who, cert in (("no client certificate", ()),
                          ("another CA's certificate", (k("stranger.crt"), k("stranger.key")))):
            with self.subTest(who):
                with self.assertRaises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
                    tls_get(d.metrics_port, k("ca.crt"), *cert)
        self.assertNotIn(b"skbnf_", plaintext_get(d.metrics_port))
        self.scraped(self.prometheus(d.metrics_port, {
            "ca_file": k("ca.crt"), "cert_file": k("client.crt"), "key_file": k("client.key")}))
        # Prometheus without its client certificate: the target is down, with a TLS error.
        bare = self.prometheus(d.metrics_port, {"ca_file": k("ca.crt")})
        down = h.until(lambda: [t for t in bare.targets() if t["health"] == "down"],
                       "prometheus without a client certificate sees the target down",
                       timeout=60)
        self.assertTrue(down[0]["lastError"], down)

    def test_rotated_certificate_is_served_without_restart(self):
        d = self.daemon()
        k = self.pki.path
        before, _ = tls_get(d.metrics_port, k("ca.crt"))
        # a new generation, swapped in by renames like a Secret volume's ..data (both files)
        self.pki.issue("server", "ca", "subjectAltName=IP:127.0.0.1", out="server-next")
        os.rename(k("server-next.key"), k("server.key"))
        os.rename(k("server-next.crt"), k("server.crt"))
        after = h.until(lambda: (lambda der: der if der != before else None)(
            tls_get(d.metrics_port, k("ca.crt"))[0]),
            "the rotated certificate served (--tls-reload-interval=1)", timeout=20)
        self.assertNotEqual(after, before)
        self.assertIn("metrics TLS: reloaded", d.read_stderr())


class MetricsTlsFlagsTest(unittest.TestCase):
    """Bad combinations stop start-up saying what to write (skbnfd: exit 2, before EAL)."""

    def start(self, *flags):
        cut = h.DAEMON_ARGS.index("--") if "--" in h.DAEMON_ARGS else len(h.DAEMON_ARGS)
        args = ([h.DAEMON] + h.DAEMON_ARGS[:cut] + ["--listen=127.0.0.1:0",
                                                    "--metrics-addr=127.0.0.1:0"] +
                list(flags) + h.DAEMON_ARGS[cut:])
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        return r.returncode, r.stderr

    def test_bad_combinations_and_files(self):
        d = tempfile.mkdtemp(prefix="skbnf-metrics-tls-flags-")
        self.addCleanup(shutil.rmtree, d, True)
        pki = Pki(d)
        k = pki.path
        cases = [
            (["--metrics-tls-cert=" + k("server.crt")],
             "--metrics-tls-cert and --metrics-tls-key must be given together"),
            (["--metrics-tls-key=" + k("server.key")],
             "--metrics-tls-cert and --metrics-tls-key must be given together"),
            (["--metrics-tls-client-ca=" + k("client-ca.crt")],
             "--metrics-tls-client-ca needs --metrics-tls-cert and --metrics-tls-key"),
            (["--metrics-tls-cert=" + k("missing.crt"), "--metrics-tls-key=" + k("server.key")],
             "--metrics-tls-cert: cannot read '%s'" % k("missing.crt")),
            (["--metrics-tls-cert=" + k("server.crt"), "--metrics-tls-key=" + k("client.key")],
             "--metrics-tls-key: '%s' is not the key of --metrics-tls-cert" % k("client.key")),
            (["--metrics-tls-cert=" + k("server.crt"), "--metrics-tls-key=" + k("server.key"),
              "--metrics-tls-client-ca=" + k("server.key")],
             "--metrics-tls-client-ca: '%s' holds no PEM certificate" % k("server.key")),
            (["--metrics-addr=off", "--metrics-tls-cert=" + k("server.crt"),
              "--metrics-tls-key=" + k("server.key")],
             "--metrics-tls-cert: /metrics is off"),
        ]
        # the fake daemon reports a start-up error with exit 1; skbnfd's flag errors are exit 2
        expected = 1 if h.daemon_is_fake() else 2
        for flags, message in cases:
            with self.subTest(flags=flags):
                code, err = self.start(*flags)
                self.assertEqual(code, expected, err)
                self.assertIn(message, err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
