# SPDX-License-Identifier: BSD-3-Clause
"""Roles (issue 31 item 1, server/core/access.h): each role can do exactly its RPCs, against the
daemon under test, with identities the transport proves and nothing else.

* mTLS: real certificates made here with the openssl CLI (a CA, the server's certificate with
  DNS:localhost and IP:127.0.0.1, client certificates with DNS and URI (SPIFFE) subject
  alternative names, and one from a second CA carrying a name --roles binds): --roles binds
  dns:/uri: names; a verified certificate it does not name gets nothing; the other CA's fails
  the handshake. The SAN forms are RFC 5280's (subjectAltName=DNS:..., URI:...), SPIFFE ids
  are URI SANs (https://github.com/spiffe/spiffe/blob/main/standards/X509-SVID.md, 2. SPIFFE ID).
* unix socket: second uids via util-linux setpriv (--reuid/--regid/--clear-groups/--groups),
  identified by SO_PEERCRED/SO_PEERGROUPS (uid:, gid: primary and supplementary); skbnfd's own
  uid is admin.
* loopback TCP: nothing with --loopback-role=none.

The client is skbnfctl (SKBNFCTL), one command per RPC:
  read     info (GetInfo), ports, strategy list/get, stats (GetStats), top --count=1
           (WatchStats), routes list, strategy set --validate-only, latency (GetStats)
  operate  strategy set, worker pause/resume, audit (AuditPool), strategy tune (TuneStrategy),
           latency set (SetLatency; on a daemon that records latency)
  admin    routes add, routes delete
A refused call exits 1 with PERMISSION_DENIED naming the role it needs; nothing changes.
Needs root (setpriv to other uids); skipped with the reason otherwise.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import control_harness as h  # noqa: E402

U_READ, U_NONE, U_GROUP, G_OPERATE = 52001, 52002, 52003, 52100

READ = [["info"], ["ports"], ["strategy", "list"], ["strategy", "get"], ["stats"],
        ["top", "--count=1", "--interval=100"], ["routes", "list"],
        ["strategy", "set", "headpool", "--validate-only"], ["latency"]]
ROLE_OF = {"read": 1, "operate": 2, "admin": 3}


def openssl_certs(d):
    key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
    lines = ["set -e", "cd " + d, "exec >openssl.log 2>&1",
             f"openssl req -x509 {key} -keyout ca.key -out ca.crt -days 2 -subj '/CN=roles CA'",
             f"openssl req -x509 {key} -keyout ca2.key -out ca2.crt -days 2 -subj '/CN=other CA'"]

    def leaf(name, san, ca="ca"):
        lines.append(f"printf 'subjectAltName={san}\\n' > {name}.ext")
        lines.append(f"openssl req {key} -keyout {name}.key -out {name}.csr -subj '/CN={name}'")
        lines.append(f"openssl x509 -req -in {name}.csr -CA {ca}.crt -CAkey {ca}.key "
                     f"-CAcreateserial -days 2 -extfile {name}.ext -out {name}.crt")
    leaf("server", "DNS:localhost,IP:127.0.0.1")
    leaf("reader", "DNS:reader.example.test")
    leaf("operator", "URI:spiffe://roles.test/ns/ops/sa/operator")
    leaf("admin", "DNS:admin.example.test,DNS:alias.example.test")
    leaf("nobody", "DNS:nobody.example.test")
    leaf("forged", "DNS:admin.example.test", ca="ca2")
    with open(os.path.join(d, "gen.sh"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if subprocess.run(["bash", os.path.join(d, "gen.sh")]).returncode != 0:
        with open(os.path.join(d, "openssl.log")) as f:
            raise RuntimeError("openssl: " + f.read())


class RolesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: setpriv to other uids")
        cls.dir = tempfile.mkdtemp(prefix="skbnf-roles-")
        os.chmod(cls.dir, 0o711)  # the other uids reach the socket inside, nothing else
        openssl_certs(cls.dir)
        cls.sock = os.path.join(cls.dir, "control.sock")
        f = lambda n: os.path.join(cls.dir, n)  # noqa: E731
        cls.daemon = h.Daemon(
            "--listen=127.0.0.1:0,unix:" + cls.sock, "--loopback-role=none",
            "--tls-cert=" + f("server.crt"), "--tls-key=" + f("server.key"),
            "--tls-client-ca=" + f("ca.crt"),
            "--roles=dns:reader.example.test=read,"
            "uri:spiffe://roles.test/ns/ops/sa/operator=operate,dns:alias.example.test=admin,"
            f"uid:{U_READ}=read,gid:{G_OPERATE}=operate")
        # The socket is skbnfd's uid and gid, 0660: the test's uids come in through group 0.
        st = os.stat(cls.sock)
        assert oct(st.st_mode & 0o777) == "0o660", oct(st.st_mode)
        code, out, err = cls.as_unix(0, "info", "--json")
        assert code == 0, err
        cls.core = str(next(l["core"] for l in json.loads(out)["lcores"]
                            if l.get("role") == "LCORE_ROLE_WORKER"))

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "daemon"):
            cls.daemon.stop()
            shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def as_unix(cls, uid, *args, groups=None):
        cmd = [h.SKBNFCTL, "--addr=unix:" + cls.sock] + list(args)
        if uid != 0:
            cmd = ["setpriv", f"--reuid={uid}", "--regid=0"] + (
                ["--groups=" + ",".join(map(str, groups))] if groups else ["--clear-groups"]) + cmd
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def tls(self, cert, *args):
        f = lambda n: os.path.join(self.dir, n)  # noqa: E731
        tls = ["--tls-ca=" + f("ca.crt"), "--tls-server-name=localhost"]
        if cert:
            tls += ["--tls-cert=" + f(cert + ".crt"), "--tls-key=" + f(cert + ".key")]
        return h.skbnfctl("--addr=" + self.daemon.grpc, *tls, *args, timeout=60)

    def spec(self, run):
        code, out, err = run("strategy", "get", "--json")
        self.assertEqual(code, 0, err)
        return json.loads(out)["spec"]

    def matrix(self, run, role, who):
        """Every RPC by `run`: allowed exactly when `role` covers it; refusals name the role."""
        have = ROLE_OF.get(role, 0)

        def expect(needs, *args):
            code, out, err = run(*args)
            if have >= ROLE_OF[needs]:
                self.assertEqual(code, 0, f"{who} ({role}) {args}: {err}")
            else:
                self.assertEqual(code, 1, f"{who} ({role}) {args} allowed: {out}")
                self.assertIn("PERMISSION_DENIED", err)
                # skbnfctl reads before some changes (strategy set asks GetInfo for the quiesce
                # timeout): a caller without even read is refused that read first.
                named = {needs, "read"} if have == 0 else {needs}
                self.assertTrue(any(f"needs role {n} (caller " in err for n in named),
                                f"{who} {args}: {err}")
        for args in READ:
            expect("read", *args)
        before = self.spec(self.as_unix0)
        nxt = "magazine" if before == "headpool" else "headpool"
        expect("operate", "strategy", "set", nxt)
        after = self.spec(self.as_unix0)
        self.assertEqual(after == nxt, have >= 2, f"{who}: strategy {before} -> {after}")
        expect("operate", "worker", "pause", self.core)
        expect("operate", "worker", "resume", self.core)
        expect("operate", "audit")
        code, out, err = self.as_unix0("--json", "stats")
        self.assertEqual(code, 0, err)
        if "latency_settings" in json.loads(out):  # the fake records no latency
            expect("operate", "latency", "set", "--slow-iteration-us=250")
        expect("admin", "routes", "add", "198.51.100.0/24", "0", "02:00:00:00:00:77")
        expect("admin", "routes", "delete", "198.51.100.0/24")

    def as_unix0(self, *args):
        return self.as_unix(0, *args)

    def test_mtls_certificates(self):
        self.matrix(lambda *a: self.tls("reader", *a), "read", "dns:reader")
        self.matrix(lambda *a: self.tls("operator", *a), "operate", "uri:spiffe")
        self.matrix(lambda *a: self.tls("admin", *a), "admin", "dns:alias (a second SAN)")
        self.matrix(lambda *a: self.tls("nobody", *a), "none", "a verified, unbound cert")
        self.matrix(lambda *a: self.tls("", *a), "none", "no certificate, loopback")
        code, _, err = self.tls("forged", "info")
        self.assertEqual(code, 1, "a certificate of another CA must fail the handshake")
        self.assertIn("UNAVAILABLE", err)

    def test_unix_peers(self):
        self.matrix(self.as_unix0, "admin", "skbnfd's own uid")
        self.matrix(lambda *a: self.as_unix(U_READ, *a), "read", f"uid:{U_READ}")
        self.matrix(lambda *a: self.as_unix(U_NONE, *a), "none", f"uid:{U_NONE}")
        self.matrix(lambda *a: self.as_unix(U_GROUP, *a, groups=[G_OPERATE]), "operate",
                    f"uid:{U_GROUP} in gid:{G_OPERATE}")
        log = self.daemon.read_stderr()  # the audit trail names who was refused
        self.assertIn(f'"event":"denied","rpc":"GetInfo","source":"rpc","who":"uid:{U_NONE} gid:0 '
                      'pid:', log)

    def test_tune_is_operate(self):
        args = ["strategy", "tune", "headpool", "--dwell=200ms", "--rounds=1", "--dry-run"]
        code, _, err = self.as_unix(U_READ, *args)
        self.assertEqual(code, 1)
        self.assertIn("TuneStrategy needs role operate (caller uid:%d has read)" % U_READ, err)
        code, _, err = self.as_unix(U_GROUP, *args, groups=[G_OPERATE])
        self.assertEqual(code, 0, err)


if __name__ == "__main__":
    unittest.main()
